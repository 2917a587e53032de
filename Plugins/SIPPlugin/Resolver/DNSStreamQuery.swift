internal import NIOCore
internal import NIOPosix
internal import ResilienceCore

/// One DNS query over TCP, for an answer that did not fit a datagram (RFC 7766 §5). RFC 1035
/// §4.2.2: "The message is prefixed with a two byte length field which gives the message
/// length, excluding the two byte length field."
///
/// Invariants: one connection per query, closed after its answer or `timeout` (connecting
/// included); the first whole message read is the answer, at most 65,535 bytes by its length
/// field; nothing else is read.
enum DNSStreamQuery {
    /// `query` to `server` over a new TCP connection; its answer, or nil after `timeout`.
    static func ask(
        _ server: SocketAddress, _ query: [UInt8], timeout: Duration, clock: any RuntimeClock
    ) async throws -> [UInt8]? {
        let waiter = AnswerWaiter()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LengthPrefixedMessage()))
                    try channel.pipeline.syncOperations.addHandler(StreamAnswerHandler(waiter: waiter))
                }
            }
            .connect(to: server).get()
        defer { channel.close(promise: nil) }
        let buffer = channel.allocator.buffer(bytes: [UInt8(query.count >> 8), UInt8(query.count & 0xff)] + query)
        return await waiter.answer(within: timeout, clock: clock) {
            channel.writeAndFlush(buffer).whenFailure { _ in waiter.finish(nil) }
        }
    }
}

/// A message behind its two-byte length.
private struct LengthPrefixedMessage: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
            buffer.readableBytes >= 2 + Int(length)
        else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        context.fireChannelRead(wrapInboundOut(buffer.readBytes(length: Int(length)) ?? []))
        return .continue
    }
}

private final class StreamAnswerHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = [UInt8]
    let waiter: AnswerWaiter

    init(waiter: AnswerWaiter) { self.waiter = waiter }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { waiter.finish(unwrapInboundIn(data)) }

    func channelInactive(context: ChannelHandlerContext) { waiter.finish(nil) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { waiter.finish(nil) }
}
