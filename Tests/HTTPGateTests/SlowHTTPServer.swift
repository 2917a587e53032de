import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A small HTTP/1.1 server on 127.0.0.1 (an ephemeral port): `GET /slow?ms=N` answers 200 `ok`
/// after N milliseconds (at most 10 s), anything else 404. Every response closes its connection.
///
/// Invariant: ``requests`` counts every request head that reached the server, answered or not.
final class SlowHTTPServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let received: Counter

    final class Counter: Sendable {
        let value = Atomic(0)
    }

    private init(port: Int, channel: any Channel, received: Counter) {
        self.port = port
        self.channel = channel
        self.received = received
    }

    /// Requests that reached the server so far.
    var requests: Int { received.value.load(ordering: .sequentiallyConsistent) }

    func url(slowMilliseconds ms: Int) -> String { "http://127.0.0.1:\(port)/slow?ms=\(ms)" }

    static func start() async throws -> SlowHTTPServer {
        let received = Counter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(SlowHandler(received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SlowHTTPServer(port: channel.localAddress!.port!, channel: channel, received: received)
    }

    /// Stops listening; connections still open end when their response is written.
    func stop() async {
        try? await channel.close()
    }
}

private final class SlowHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let received: SlowHTTPServer.Counter

    init(received: SlowHTTPServer.Counter) { self.received = received }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        received.value.add(1, ordering: .sequentiallyConsistent)
        guard head.method == .GET, let delay = Self.delay(of: head.uri) else {
            respond(context: context, status: .notFound)
            return
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: delay) {
            let (handler, context) = bound.value
            handler.respond(context: context, status: .ok)
        }
    }

    /// `/slow?ms=N` → N ms, capped at 10 s; nil for any other target.
    static func delay(of uri: String) -> TimeAmount? {
        guard uri.hasPrefix("/slow?ms="), let ms = Int64(uri.dropFirst("/slow?ms=".count)), ms >= 0 else {
            return nil
        }
        return .milliseconds(min(ms, 10_000))
    }

    private func respond(context: ChannelHandlerContext, status: HTTPResponseStatus) {
        guard context.channel.isActive else { return }
        let body = status == .ok ? "ok" : "not found"
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "text/plain")
        headers.add(name: "content-length", value: "\(body.utf8.count)")
        headers.add(name: "connection", value: "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}
