public import Logging
public import ResilienceCore
import Synchronization

/// Watches the kernel's network facts through rtnetlink (libnl-3) and publishes raw events and
/// debounced path transitions.
///
/// A `final class` guarded by a `Mutex`, not an actor: facts originate on a dedicated OS thread
/// blocked in poll(2). A lock lets that thread publish each batch synchronously and in kernel
/// order (an actor would need an unordered `Task` hop per batch), and lets the hold-down deadline
/// be poll's timeout, so there is exactly one timer and no wake-up while nothing changes.
///
/// Invariants:
/// - Every `transitions()` subscriber gets `.initial` first (the path as last reported), then
///   changes; every `events()` subscriber gets each event read after it subscribed, in order,
///   with strictly increasing `seq`.
/// - An overrun never ends a stream: the cache is rebuilt from a dump, the difference is
///   published as `synthesized` events, then `.resynced`.
/// - Streams finish only on ``shutdown()``, which must be called: the reader thread keeps the
///   monitor alive until then.
///
/// ```swift
/// let monitor = NetlinkMonitor(holdDown: .seconds(2), logger: logger)
/// try await monitor.start()
/// for await transition in monitor.transitions() { print(transition.kind) }
/// ```
public final class NetlinkMonitor: NetworkEventSource {
    public let filter: InterfaceFilter
    public let holdDown: Duration
    /// Requested size; the kernel may grant another (see ``grantedReceiveBufferSize``).
    public let receiveBufferSize: Int
    /// Network namespace (a name under `/var/run/netns`) the reader thread enters before opening
    /// its sockets; nil watches the process's own namespace.
    public let namespace: String?
    let logger: Logger
    let state: Mutex<State>
    let wakePipe: WakePipe
    /// Fan-outs of raw events and transitions; yielded to (and subscribed) under ``state``'s lock,
    /// so every subscriber sees one kernel order. Finished on shutdown.
    let eventStreams = Broadcast<NetworkEvent>()
    let transitionStreams = Broadcast<PathTransition>()

    /// - Parameters:
    ///   - filter: interfaces that count for the path (events are reported for all).
    ///   - holdDown: how long a loss must last before `lost` is reported (0, the default, reports
    ///     at once). Leave it 0 when the monitor feeds a `ResilienceManager`: the manager applies
    ///     its policy's `holdDown` to every source; `netres watch` sets it for its own output.
    ///   - receiveBufferSize: bytes of socket buffer to ask for; tests pass a tiny one to force
    ///     overruns.
    ///   - namespace: watch this named network namespace instead of the current one.
    ///   - logger: where netlink failures and overruns are logged.
    public init(
        filter: InterfaceFilter = .all, holdDown: Duration = .zero, receiveBufferSize: Int = 4 << 20,
        namespace: String? = nil, logger: Logger
    ) {
        self.filter = filter
        self.holdDown = holdDown
        self.receiveBufferSize = receiveBufferSize
        self.namespace = namespace
        self.logger = logger
        self.state = Mutex(State(tracker: NetworkPathTracker(filter: filter, holdDown: holdDown)))
        // A pipe only fails when the process is out of descriptors; the reader then fails at start.
        self.wakePipe = (try? WakePipe()) ?? .unavailable
    }

    deinit { wakePipe.close() }

    /// Opens the sockets (in ``namespace``), joins the groups, dumps the current state and starts
    /// the reader thread. Returns once ``snapshot()`` holds the dump and `.initial` is published.
    ///
    /// - Throws: ``NetlinkError`` when netlink cannot be opened or dumped, on a second call, or
    ///   after ``shutdown()``.
    public func start() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let refusal = state.withLock { state -> NetlinkError? in
                guard state.phase == .idle else { return state.phase == .stopped ? .shutDown : .alreadyStarted }
                state.phase = .starting
                state.startContinuation = continuation
                return nil
            }
            if let refusal { return continuation.resume(throwing: refusal) }
            guard wakePipe.readEnd >= 0, ReaderThread.spawn({ NetlinkReader.run(for: self) }) else {
                readerFailed(NetlinkSocket.systemError("starting the netlink reader"))
                readerExited()
                return
            }
        }
    }

    /// Stops the reader, closes the sockets and finishes every stream. Idempotent.
    public func shutdown() async {
        let running = state.withLock { state in
            state.commands.stop = true
            return state.phase == .starting || state.phase == .running
        }
        guard running else { return readerExited() }
        wakePipe.wake()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = state.withLock { state in
                if !state.threadExited { state.exitWaiters.append(continuation) }
                return state.threadExited
            }
            if exited { continuation.resume() }
        }
    }

    /// The cached facts, current as of the last batch read.
    public func snapshot() -> NetworkSnapshot { state.withLock { $0.snapshot } }

    /// The path derived from ``snapshot()`` now (not debounced).
    public func currentPath() -> NetworkPath { state.withLock { $0.tracker.current } ?? derivedEmpty }

    /// The receive buffer the kernel granted the event socket, once started.
    public var grantedReceiveBufferSize: Int? { state.withLock { $0.grantedBuffer } }

    private var derivedEmpty: NetworkPath { NetworkPath.derive(from: .empty, filter: filter) }

    /// Raw events from now on, until shutdown. Buffered without limit so none is ever dropped:
    /// a subscriber that stops reading holds memory, so cancel the iteration when done.
    public func events() -> AsyncStream<NetworkEvent> {
        // Subscribing under the monitor's lock orders it against publishing (also under the lock):
        // the stream gets exactly the events published after this call.
        state.withLock { _ in eventStreams.subscribe() }
    }

    /// Debounced transitions: `.initial` first (once started), then changes, until shutdown.
    public func transitions() -> AsyncStream<PathTransition> {
        // Under the monitor's lock, so `.initial` is the path as last reported and the stream then
        // gets exactly the transitions published after it (none missed or repeated).
        state.withLock { state in
            let greeting = state.phase == .running ? state.tracker.reported : nil
            return transitionStreams.subscribe(
                startingWith: greeting.map { PathTransition(kind: .initial, path: $0, at: .now) })
        }
    }
}
