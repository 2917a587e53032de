import ChildProcesses
internal import Foundation
internal import Glibc
public import Logging
public import ResilienceCore
internal import Synchronization

/// Runs the executables of a directory on each path transition and each call event, one after
/// the other, on one worker of its own.
///
/// Invariants:
/// - ``submit(_:)`` never blocks or waits: a hook that hangs or fails never stops the caller.
/// - Newest wins: while hooks run for one transition, at most one more waits; a newer one
///   replaces it, and the number replaced is logged when the waiting one starts. Call events
///   are not coalesced: up to `HookQueue.callCapacity` (32) wait in order.
/// - Only hooks ``HookTrust`` accepts run (root's or the daemon user's, writable by no one else,
///   in such a directory, symbolic links resolved); others are skipped with a log line saying why.
/// - Each hook runs without a shell, in a process group of its own, with stdin `/dev/null`, only
///   the ``HookEnvironment`` variables (plus `PATH`), and its output read through a pipe into a
///   fixed-size ``OutputTail`` whose last lines are logged (no file, memory bounded however much it
///   prints). Past `timeout` the group gets SIGTERM, then SIGKILL 2 s later. When a hook ends,
///   whatever is left of its group is killed, and in a ``ProcessTree`` subreaper every descendant
///   that left the group (`setsid`) too.
/// - After ``stop()`` returns, no hook process is left running.
public final class HookRunner: Sendable {
    public let directory: String
    public let timeout: Duration
    private let continuation: AsyncStream<Void>.Continuation
    private let flags: Flags
    private let worker: Task<Void, Never>

    /// Time a timed-out hook's group has between SIGTERM and SIGKILL.
    public static let killGrace: Duration = .seconds(2)
    /// Most lines of a hook's output that are logged (its last ones).
    public static let loggedLines = 10
    /// Bytes of a hook's output kept in memory (its last ones).
    public static let loggedBytes = 4096

    public init(directory: String, timeout: Duration = .seconds(10), clock: WallClock = WallClock(), logger: Logger) {
        self.directory = directory
        self.timeout = timeout
        let (wakeUps, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.continuation = continuation
        let run = HookRun(directory: directory, timeout: timeout, logger: logger)
        let flags = Flags()
        self.flags = flags
        worker = Task {
            for await _ in wakeUps {
                while !flags.stopping.load(ordering: .acquiring), let next = flags.queue.withLock({ $0.next() }) {
                    if next.coalesced > 0 {
                        logger.info("hooks: coalesced older transitions", metadata: ["coalesced": "\(next.coalesced)"])
                    }
                    if next.droppedCalls > 0 {
                        logger.warning(
                            "hooks: dropped older call events", metadata: ["dropped": "\(next.droppedCalls)"])
                    }
                    let environment =
                        switch next.job {
                        case .transition(let transition): HookEnvironment.variables(of: transition, clock: clock)
                        case .call(let variables): variables
                        }
                    for hook in run.hooks() {
                        if flags.stopping.load(ordering: .acquiring) { break }
                        await run.run(hook, environment: environment)
                    }
                }
            }
        }
    }

    /// Whether `path` names a directory (following symbolic links), for checking a hooks option.
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Queues hooks for `transition` and returns at once; replaces a transition still waiting.
    public func submit(_ transition: PathTransition) {
        flags.queue.withLock { $0.submit(.transition(transition)) }
        continuation.yield()
    }

    /// Queues hooks for one call event (``HookEnvironment/variables(ofCall:at:clock:)``) and
    /// returns at once.
    public func submit(environment: [String: String]) {
        flags.queue.withLock { $0.submit(.call(environment)) }
        continuation.yield()
    }

    /// Drops waiting transitions, lets a running hook finish within its timeout (then kills it)
    /// and returns when the worker has ended.
    public func stop() async {
        flags.stopping.store(true, ordering: .releasing)
        continuation.finish()
        await worker.value
    }

    /// State shared by ``submit(_:)``, ``stop()`` and the worker.
    private final class Flags: Sendable {
        /// What waits for the worker.
        let queue = Mutex(HookQueue())
        let stopping = Atomic<Bool>(false)
    }
}
