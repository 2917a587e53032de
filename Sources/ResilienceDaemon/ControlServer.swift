internal import Glibc
public import Logging
import NIOCore
import NIOPosix
import ResilienceCore
public import ServiceLifecycle
internal import Synchronization

/// The unix stream control socket of `netres run`: one command per line, one reply per command.
///
/// Invariants:
/// - The socket file is mode 0600 (0660 and the configured group's with ``ControlAccess/group``);
///   the caller holds the ``InstanceLock``, so replacing a stale socket file never takes over a
///   live daemon's; the file is removed on shutdown.
/// - Every connection's `SO_PEERCRED` is checked against ``ControlAccess`` before any byte is
///   read: a refused peer gets one `error: refused` line, is closed and logged; its request never
///   reaches the handler (logged: the first ten, then one per hundred).
/// - At most ``Limits/maxConnections`` connections are open: a new one evicts the one idle the
///   longest, so `ctl` always gets in (logged once per hundred evictions). A connection that sends nothing for ``Limits/idleTimeout``
///   is closed. A line longer than 64 KiB ends the connection.
/// - A connection whose first line opens a session (``ControlSessionHandler/opens``) stays open
///   as a ``ControlSession``: no idle timeout, never evicted, at most ``Limits/maxSessions`` at
///   once (one more is refused with an `error:` line).
/// - Graceful shutdown stops accepting and cancels open connections.
public struct ControlServer: Service {
    public typealias Handler = @Sendable (String) async -> String

    /// Bounds on what clients can hold open.
    public struct Limits: Hashable, Sendable {
        public var maxConnections: Int
        public var idleTimeout: Duration
        /// The most sessions open at once; always fewer than `maxConnections`, so a one-shot
        /// command still gets in.
        public var maxSessions: Int

        public init(maxConnections: Int = 64, idleTimeout: Duration = .seconds(30), maxSessions: Int = 32) {
            self.maxConnections = max(1, maxConnections)
            self.idleTimeout = idleTimeout
            self.maxSessions = max(0, min(maxSessions, self.maxConnections - 1))
        }
    }

    public let path: String
    public let access: ControlAccess
    public let limits: Limits
    let logger: Logger
    let handler: Handler
    let sessions: ControlSessionHandler?

    /// - Parameters:
    ///   - sessions: serves the connections whose first line opens a session; nil for none.
    ///   - handler: turns one request line into its reply (ending in a newline).
    public init(
        path: String, access: ControlAccess = ControlAccess(), limits: Limits = Limits(),
        logger: Logger = Logger(label: "netres.control"), sessions: ControlSessionHandler? = nil,
        handler: @escaping Handler
    ) {
        self.path = path
        self.access = access
        self.limits = limits
        self.logger = logger
        self.sessions = sessions
        self.handler = handler
    }

    typealias Connection = (
        channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, peer: ControlAccess.Peer?, idle: CloseOnIdle
    )

    /// Binds the socket (so `ctl` works as soon as this returns) and serves until graceful shutdown.
    public func run() async throws {
        let server = try await bind()
        defer { unlink(path) }
        let stopping = Atomic<Bool>(false)
        let stop: @Sendable () -> Void = {
            stopping.store(true, ordering: .releasing)
            server.channel.close(promise: nil)
        }
        // The accept loop runs in a task of its own, which cancellation never reaches: NIO drops
        // the connections still buffered in a cancelled stream without finishing them, and traps.
        // Shutdown and cancellation close the listening socket instead; the loop then closes what
        // was buffered, ends the open connections and returns.
        let loop = Task { await acceptLoop(server, stopping: stopping) }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await loop.value
            } onGracefulShutdown: {
                stop()
            }
        } onCancel: {
            stop()
        }
    }

    func refusal(of peer: ControlAccess.Peer?) -> String? {
        guard let peer else { return "the peer's credentials cannot be read" }
        return access.refusal(of: peer) { ControlAccess.groups(ofUser: peer.uid) }
    }

    func bind() async throws -> NIOAsyncChannel<Connection, Never> {
        try InstanceLock.ensureDirectory(of: path)
        let idle = TimeAmount.nanoseconds(limits.idleTimeout.nanosecondsValue)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                Self.peer(of: channel).flatMapThrowing { peer in
                    let closeOnIdle = CloseOnIdle()
                    try channel.pipeline.syncOperations.addHandlers(IdleStateHandler(readTimeout: idle), closeOnIdle)
                    let wrapped = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    return (channel: wrapped, peer: peer, idle: closeOnIdle)
                }
            }
        let mode: mode_t = access.group == nil ? 0o600 : 0o660
        guard chmod(path, mode) == 0, access.group.map({ chown(path, UInt32.max, $0) == 0 }) ?? true else {
            let failure = DaemonError.system("chmod/chown \(path)")
            try? await server.channel.close()
            throw failure
        }
        return server
    }

    /// The connecting process's credentials (`SO_PEERCRED`), or nil when they cannot be read.
    static func peer(of channel: any Channel) -> EventLoopFuture<ControlAccess.Peer?> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let credentials: EventLoopFuture<ControlAccess.KernelCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return credentials.map { Optional(ControlAccess.Peer(pid: $0.pid, uid: $0.uid, gid: $0.gid)) }
            .recover { _ in nil }
    }

    /// Most a refused peer may still send (discarded) before its connection is closed.
    static let refusedDrain = (bytes: 65536, time: Duration.seconds(1))

    /// Writes the refusal, half-closes, and discards what the peer still sends (bounded by
    /// ``refusedDrain``) so that closing does not reset the connection before it reads why.
    /// The drain's deadline is a timer of the connection's event loop, not `Task.sleep` (which
    /// would start libdispatch's once-a-second monitor for the rest of the daemon's life).
    func refuse(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, _ why: String) async {
        let clock = EventLoopClock(eventLoop: connection.channel.eventLoop)
        try? await connection.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "error: refused: \(why)\n"))
            outbound.finish()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await clock.sleep(for: Self.refusedDrain.time) }
                group.addTask {
                    var discarded = 0
                    for try await chunk in inbound {
                        discarded += chunk.readableBytes
                        if discarded > Self.refusedDrain.bytes { return }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    func serve(_ connection: Connection, id: Int, table: ConnectionTable) async throws {
        try await connection.channel.executeThenClose { inbound, outbound in
            let lines = ControlLineReader(inbound) { table.touch(id) }
            while true {
                let line: String?
                do {
                    line = try await lines.next()
                } catch let error as DaemonError {
                    try await outbound.write(ByteBuffer(string: "error: \(error)\n"))
                    return
                }
                guard let line else { return }
                if let sessions, sessions.opens(line) {
                    guard table.pin(id, cap: limits.maxSessions) else {
                        try await outbound.write(
                            ByteBuffer(string: "error: too many sessions (at most \(limits.maxSessions))\n"))
                        return
                    }
                    connection.idle.isExempt.store(true, ordering: .releasing)
                    await serveSession(first: line, lines, sessions, peer: connection.peer, outbound)
                    return
                }
                try await reply(to: line, outbound)
                table.touch(id)
            }
        }
    }

    /// Runs a session: the handler reads the client's lines while one writer drains what the
    /// daemon queued; when the handler returns, what is queued is written and the connection ends.
    private func serveSession(
        first: String, _ reader: ControlLineReader, _ sessions: ControlSessionHandler, peer: ControlAccess.Peer?,
        _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    ) async {
        let session = ControlSession(peer: peer, droppedLine: sessions.droppedLine)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await session.drain(to: outbound) }
            await sessions.serve(first, ControlSessionLines(reader), session)
            session.close()
            await group.waitForAll()
        }
    }

    private func reply(to line: String, _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws {
        guard !line.allSatisfy(\.isWhitespace) else { return }
        try await outbound.write(ByteBuffer(string: await handler(line)))
    }
}

/// Closes a connection when its ``IdleStateHandler`` reports it idle, unless it became a session.
final class CloseOnIdle: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny

    /// Set once the connection is a session, which may stay quiet as long as it likes.
    let isExempt = Atomic<Bool>(false)

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            guard !isExempt.load(ordering: .acquiring) else { return }
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
