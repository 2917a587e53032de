internal import Glibc
internal import Logging
internal import NIOCore
internal import ResilienceCore
internal import Synchronization

/// The stream path's handlers, added last: the frame decoder and the handler that passes its
/// frames up. A security layer (TLS) goes in front of them, so the decoder only ever sees
/// plaintext SIP bytes whatever the channel carries.
func addStreamHandlers(to pipeline: ChannelPipeline.SynchronousOperations, _ callbacks: FlowCallbacks) throws {
    try pipeline.addHandler(ByteToMessageHandler(SIPFrameDecoder()))
    try pipeline.addHandler(StreamInbound(callbacks))
}

/// What both inbound handlers report to: the log and the upper layer.
struct FlowCallbacks: Sendable {
    let log: ThrottledLog
    let inbound: SIPInboundHandler
    /// A CRLF arrived between messages on a stream (RFC 5626 §4.4.1 pong).
    let onPong: @Sendable () -> Void
}

/// The inbound end of a shared UDP socket: parses each datagram once and hands it to the flow
/// `destination` names, with a way to answer the datagram's source.
final class DatagramInbound: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let log: ThrottledLog
    /// The door of a Contact listener's socket (``ContactListener``); nil on the registrar's.
    let gate: ContactGate?
    /// The attached flow a message belongs to; nil drops it (the socket counts it).
    let destination: @Sendable (SIPMessage) -> SIPTransport?
    /// Where a STUN datagram goes (RFC 5626 §4.4.1 keep-alive answers); nil drops it as malformed SIP.
    let stun: (@Sendable ([UInt8]) -> Void)?

    init(
        log: ThrottledLog, gate: ContactGate? = nil, stun: (@Sendable ([UInt8]) -> Void)? = nil,
        destination: @escaping @Sendable (SIPMessage) -> SIPTransport?
    ) {
        self.log = log
        self.gate = gate
        self.stun = stun
        self.destination = destination
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = Array(envelope.data.readableBytesView)
        if bytes.allSatisfy({ $0 == 13 || $0 == 10 }) { return }  // a flow ping or pong
        if let stun, STUNMessage.looksLikeSTUN(bytes) { return stun(bytes) }
        var message: SIPMessage
        do {
            message = try SIPParser.parse(datagram: bytes)
        } catch {
            if let answer = error.boundedHead?.boundedAnswer {
                let buffer = context.channel.allocator.buffer(bytes: answer.serialized())
                context.writeAndFlush(
                    wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)),
                    promise: nil)
            }
            log.log(
                .warning, "sip.malformed-datagram",
                metadata: [
                    "reason": "\(LogText.escaped(error.reason))", "peer": "\(envelope.remoteAddress)",
                    "bytes": "\(bytes.count)",
                ])
            return
        }
        let source = envelope.remoteAddress
        guard let flow = destination(message), let callbacks = flow.callbacks.withLock({ $0 }) else {
            log.log(.notice, "sip.unrouted-datagram", metadata: TransactionLayer.describe(message))
            return
        }
        if let gate {
            guard let admitted = gate.admit(message, from: source, for: flow.flowTag) else { return }
            message = admitted
        } else {
            message = ReceivedVia.stampedIfRequest(message, from: source)
        }
        // Fixed here, from the packet: the answer and its retransmissions go nowhere the request
        // names. A flow's socket is connected to its server, so it can only answer the source.
        let target = gate == nil ? source : ReceivedVia.answerTarget(of: message, source: source)
        let channel = context.channel
        callbacks.inbound(message) { reply in
            let buffer = channel.allocator.buffer(bytes: reply.serialized())
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: buffer), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // On the connected socket, ICMP port unreachable from the registrar arrives as
        // ECONNREFUSED (NIO keeps the channel open): nobody listens there any more, so the flows
        // are over. Closing it fails pending transactions at once and reports the losses.
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED {
            log.log(.warning, "sip.udp-unreachable", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        } else {
            log.log(.debug, "sip.udp-error", metadata: ["error": "\(LogText.escaped("\(error)"))"])
        }
    }
}

final class StreamInbound: ChannelInboundHandler {
    typealias InboundIn = SIPStreamFrame
    typealias OutboundOut = ByteBuffer

    let flow: FlowCallbacks
    /// The door of a Contact listener's connection (``ContactStreamListener``); nil on a flow.
    let gate: ContactGate?
    /// Told of every frame (a message, a keep-alive, a refused head): the connection is in use.
    let onFrame: (@Sendable () -> Void)?

    init(_ flow: FlowCallbacks, gate: ContactGate? = nil, onFrame: (@Sendable () -> Void)? = nil) {
        self.flow = flow
        self.gate = gate
        self.onFrame = onFrame
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onFrame?()
        switch unwrapInboundIn(data) {
        case .pong:
            flow.onPong()
        case .message(var message):
            if let gate {
                // One account per stream listener: one bucket.
                guard let admitted = gate.admit(message, from: context.channel.remoteAddress, for: "") else { return }
                message = admitted
            } else if let source = context.channel.remoteAddress {
                message = ReceivedVia.stampedIfRequest(message, from: source)
            }
            let (channel, bounded) = (context.channel, gate != nil)
            flow.inbound(message) { reply in
                // A stranger that sends and never reads cannot pile answers up in our memory.
                if bounded, !channel.isWritable { return }
                channel.writeAndFlush(channel.allocator.buffer(bytes: reply.serialized()), promise: nil)
            }
        case .refused(let head, let reason):
            flow.log.log(
                .warning, "sip.refused-message",
                metadata: TransactionLayer.describe(head).merging(["reason": "\(LogText.escaped(reason))"]) { $1 })
            guard let answer = head.boundedAnswer else { return }
            context.writeAndFlush(
                wrapOutboundOut(context.channel.allocator.buffer(bytes: answer.serialized())), promise: nil)
        }
    }

    /// A listener's connection idle for ``ContactGate/idleConnection`` is closed.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if gate != nil, event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason = (error as? SIPParseError)?.reason ?? "\(error)"
        flow.log.log(.warning, "sip.stream-closed", metadata: ["reason": "\(LogText.escaped(reason))"])
        context.close(promise: nil)
    }
}

extension ReceivedVia {
    /// `message` with its top `Via` stamped from `source` when it is a request with a usable
    /// `Via` (the flows' path: the transaction layer refuses what has none); otherwise as it came.
    static func stampedIfRequest(_ message: SIPMessage, from source: SocketAddress) -> SIPMessage {
        guard message.isRequest, let host = source.ipAddress, let port = source.port else { return message }
        return stamped(message, sourceHost: host, sourcePort: port) ?? message
    }

    /// Where a UDP answer to `request`, which came from `source`, goes: the source's address at
    /// ``answerPort(of:sourcePort:)``.
    static func answerTarget(of request: SIPMessage, source: SocketAddress) -> SocketAddress {
        guard let port = source.port else { return source }
        var target = source
        target.port = answerPort(of: request, sourcePort: port)
        return target
    }
}
