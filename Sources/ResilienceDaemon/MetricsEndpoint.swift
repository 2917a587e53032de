public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ResilienceCore
public import ServiceLifecycle
import Synchronization

/// Serves ``DaemonMetrics`` over HTTP/1.1: `GET /metrics` answers the Prometheus text format,
/// anything else 404. Every response closes its connection.
///
/// Invariants: it listens only where ``MetricsConfig`` says (loopback by default); a request
/// head larger than NIO's default limit is refused by the HTTP decoder; it stops listening on
/// graceful shutdown. ``port`` is the bound port once ``run()`` has bound (port 0 picks one).
/// Bounded like the control socket (``ControlServer/Limits``): at most `maxConnections` are open
/// (a new one closes the one idle the longest, so a scraper always gets in and idle clients
/// cannot take the daemon's descriptors), and one that sends nothing for `idleTimeout` is closed.
public final class MetricsEndpoint: Service, Sendable {
    let config: MetricsConfig
    let metrics: DaemonMetrics
    let logger: Logger
    let limits: ControlServer.Limits
    private let connections = ConnectionTable()
    private struct Bound {
        var published = false
        var port: Int?
        var waiters: [CheckedContinuation<Int?, Never>] = []
    }
    private let bound = Mutex(Bound())

    public init(
        config: MetricsConfig, metrics: DaemonMetrics, logger: Logger,
        limits: ControlServer.Limits = ControlServer.Limits()
    ) {
        self.config = config
        self.metrics = metrics
        self.logger = logger
        self.limits = limits
    }

    /// The bound port, once listening; nil when binding failed.
    public func port() async -> Int? {
        await withCheckedContinuation { continuation in
            let published: Int?? = bound.withLock { state in
                if state.published { return .some(state.port) }
                state.waiters.append(continuation)
                return .none
            }
            if let published { continuation.resume(returning: published) }
        }
    }

    public func run() async throws {
        let (metrics, table, limits) = (self.metrics, connections, self.limits)
        let idle = TimeAmount.nanoseconds(limits.idleTimeout.nanosecondsValue)
        let channel: any Channel
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandlers(
                            CappedConnection(table: table, cap: limits.maxConnections),
                            IdleStateHandler(readTimeout: idle), CloseOnIdle())
                        try pipeline.configureHTTPServerPipeline()
                        try pipeline.addHandler(MetricsHandler(metrics: metrics))
                    }
                }
                .bind(host: config.address, port: config.port).get()
        } catch {
            logger.error("metrics endpoint cannot listen", metadata: ["address": "\(config.address):\(config.port)"])
            publish(nil)
            throw error
        }
        let port = channel.localAddress?.port
        publish(port)
        logger.info("metrics endpoint listening", metadata: ["url": "http://\(config.address):\(port ?? 0)/metrics"])
        try? await gracefulShutdown()
        try? await channel.close()
    }

    private func publish(_ port: Int?) {
        let waiters = bound.withLock { state in
            (state.published, state.port) = (true, port)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }
}

/// Lists its connection in a ``ConnectionTable`` while it is open (closing the one the table
/// evicts to stay within `cap`) and records its reads as activity.
private final class CappedConnection: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let table: ConnectionTable
    let cap: Int
    private var id: Int?

    init(table: ConnectionTable, cap: Int) {
        self.table = table
        self.cap = cap
    }

    func channelActive(context: ChannelHandlerContext) {
        let (id, evicted, _) = table.admit(context.channel, cap: cap)
        self.id = id
        evicted?.close(promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let id { table.touch(id) }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let id { table.remove(id) }
        context.fireChannelInactive()
    }
}

private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let metrics: DaemonMetrics

    init(metrics: DaemonMetrics) { self.metrics = metrics }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let found = head.method == .GET && (head.uri == "/metrics" || head.uri.hasPrefix("/metrics?"))
        let body = found ? metrics.exposition() : Array("not found\n".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: found ? "text/plain; version=0.0.4" : "text/plain")
        headers.add(name: "content-length", value: "\(body.count)")
        headers.add(name: "connection", value: "close")
        let status: HTTPResponseStatus = found ? .ok : .notFound
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}
