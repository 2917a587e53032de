internal import Glibc
internal import Logging
internal import NIOCore
internal import NIOPosix
internal import NIOSSL
internal import ResilienceCore
internal import Synchronization

/// The transport protocol of an account.
public enum SIPTransportKind: String, Hashable, Sendable, Codable, CaseIterable {
    case udp
    case tcp
    /// TCP with TLS (RFC 3261 §26, `sips:`); see ``SIPTLSSettings``.
    case tls

    var viaName: String { rawValue.uppercased() }

    /// A byte stream (TCP or TLS): framed, kept alive with CRLF pings, never retransmitted.
    var isStream: Bool { self != .udp }

    /// The registrar port when none is given: 5061 for TLS, else 5060.
    public var defaultPort: Int { self == .tls ? 5061 : 5060 }
}

/// What a transport hands upward: one parsed message and a way to answer on the same flow.
typealias SIPInboundHandler = @Sendable (SIPMessage, _ reply: @escaping @Sendable (SIPMessage) -> Void) -> Void

/// One flow to the registrar: a UDP socket or a TCP (or TLS over TCP) connection bound to one
/// local address. A TLS flow is returned only once its handshake verified the registrar.
///
/// Malformed input is logged and dropped (UDP) or closes the connection (TCP, where framing is
/// lost); the owner opens a new transport on the next request, so nothing wedges.
///
/// The UDP socket is connected to the registrar, so the kernel hands it ICMP port-unreachable as
/// ECONNREFUSED and only the registrar's datagrams arrive; ECONNREFUSED closes the flow.
///
/// Invariant: `onLost` runs exactly once for a flow that ended without the owner's ``close()``
/// (server FIN/RST, ECONNREFUSED, broken framing, ``abandon()``) and never after ``close()``.
final class SIPTransport: Sendable {
    let kind: SIPTransportKind
    let channel: any Channel
    /// The bound local address as text, without port (what Contact and Via carry).
    let localHost: String
    let localPort: Int
    let remote: SocketAddress
    /// Set by ``close()`` before the channel closes, so the close is not taken for a loss.
    private let closedByOwner = Mutex(false)

    private init(kind: SIPTransportKind, channel: any Channel, localHost: String, remote: SocketAddress) {
        self.kind = kind
        self.channel = channel
        self.localHost = localHost
        self.localPort = channel.localAddress?.port ?? 0
        self.remote = remote
    }

    var isActive: Bool { channel.isActive }

    /// `host:port` for Via and Contact, with brackets around IPv6.
    var sentBy: String { "\(formatHost(localHost)):\(localPort)" }

    /// Opens a flow bound to `localHost` (port chosen by the kernel) and connected to `remote`.
    /// `onLost` gets the flow when it ends without ``close()``.
    /// `log` takes the warnings a peer can provoke (malformed input), rate-limited.
    /// - Throws: ``SIPTLSFailure`` when the registrar's certificate is refused (permanent).
    static func open(
        kind: SIPTransportKind, localHost: String, remote: SocketAddress, tls: SIPTLSSettings = SIPTLSSettings(),
        serverName: String? = nil, log: ThrottledLog,
        onLost: @escaping @Sendable (SIPTransport) -> Void, onPong: @escaping @Sendable () -> Void,
        inbound: @escaping SIPInboundHandler
    ) async throws -> SIPTransport {
        let local = try SocketAddress(ipAddress: localHost, port: 0)
        let group = MultiThreadedEventLoopGroup.singleton
        let callbacks = FlowCallbacks(log: log, inbound: inbound, onPong: onPong)
        let channel: any Channel
        switch kind {
        case .udp:
            channel = try await DatagramBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DatagramInbound(callbacks))
                    }
                }
                .bind(to: local).get()
            do {
                try await channel.connect(to: remote).get()
            } catch {
                try? await channel.close()
                throw error
            }
        case .tcp, .tls:
            let context = kind == .tls ? try SIPTLS.context(tls) : nil
            // Created only for TLS, and completed on every path (NIO traps on a leaked promise).
            let handshake = context.map { _ in group.any().makePromise(of: Void.self) }
            do {
                channel = try await ClientBootstrap(group: group)
                    .connectTimeout(.seconds(5))
                    .bind(to: local)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let pipeline = channel.pipeline.syncOperations
                            if let context, let handshake {
                                try pipeline.addHandler(TLSAbortHandler())
                                try pipeline.addHandler(
                                    NIOSSLClientHandler(context: context, serverHostname: serverName))
                                try pipeline.addHandler(TLSHandshakeWaiter(done: handshake, expectedName: serverName))
                            }
                            try addStreamHandlers(to: pipeline, callbacks)
                        }
                    }
                    .connect(to: remote).get()
            } catch {
                handshake?.fail(error)
                throw error
            }
            if let handshake {
                try await SIPTLS.verify(
                    channel, handshake: handshake, local: local, remote: remote, serverName: serverName, tls: tls)
            }
        }
        let transport = SIPTransport(kind: kind, channel: channel, localHost: localHost, remote: remote)
        channel.closeFuture.whenComplete { [transport] _ in
            if !transport.closedByOwner.withLock({ $0 }) { onLost(transport) }
        }
        return transport
    }

    func send(_ message: SIPMessage) async throws {
        try await send(bytes: message.serialized())
    }

    func send(bytes: [UInt8]) async throws {
        let buffer = channel.allocator.buffer(bytes: bytes)
        switch kind {
        case .udp: try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: buffer))
        case .tcp, .tls: try await channel.writeAndFlush(buffer)
        }
    }

    /// Closes the flow on the owner's behalf (address change, shutdown): not a loss.
    /// - Parameter graceful: false for a flow whose local address vanished: a TLS flow then
    ///   closes its connection at once instead of waiting for a close_notify that cannot come.
    func close(graceful: Bool = true) async {
        closedByOwner.withLock { $0 = true }
        if !graceful, kind == .tls {
            try? await channel.triggerUserOutboundEvent(TLSAbortHandler.Abort()).get()
        }
        try? await channel.close()
    }

    /// Closes a flow the owner found dead (flow ping unanswered): reported as lost.
    func abandon() async {
        try? await channel.close()
    }
}

func formatHost(_ host: String) -> String {
    host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
}

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

final class DatagramInbound: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let flow: FlowCallbacks

    init(_ flow: FlowCallbacks) { self.flow = flow }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = Array(envelope.data.readableBytesView)
        if bytes.allSatisfy({ $0 == 13 || $0 == 10 }) { return }  // a flow ping or pong
        let message: SIPMessage
        do {
            message = try SIPParser.parse(datagram: bytes)
        } catch {
            flow.log.log(
                .warning, "sip.malformed-datagram",
                metadata: [
                    "reason": "\(LogText.escaped(error.reason))", "peer": "\(envelope.remoteAddress)",
                    "bytes": "\(bytes.count)",
                ])
            return
        }
        let channel = context.channel
        let source = envelope.remoteAddress
        flow.inbound(message) { reply in
            let buffer = channel.allocator.buffer(bytes: reply.serialized())
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: source, data: buffer), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // On the connected socket, ICMP port unreachable from the registrar arrives as
        // ECONNREFUSED (NIO keeps the channel open): nobody listens there any more, so the flow
        // is over. Closing it fails pending transactions at once and reports the loss.
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED {
            flow.log.logger.warning("sip.udp-unreachable", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        } else {
            flow.log.log(.debug, "sip.udp-error", metadata: ["error": "\(LogText.escaped("\(error)"))"])
        }
    }
}

final class StreamInbound: ChannelInboundHandler {
    typealias InboundIn = SIPStreamFrame

    let flow: FlowCallbacks

    init(_ flow: FlowCallbacks) { self.flow = flow }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .pong:
            flow.onPong()
        case .message(let message):
            let channel = context.channel
            flow.inbound(message) { reply in
                channel.writeAndFlush(channel.allocator.buffer(bytes: reply.serialized()), promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let reason = (error as? SIPParseError)?.reason ?? "\(error)"
        flow.log.log(.warning, "sip.stream-closed", metadata: ["reason": "\(LogText.escaped(reason))"])
        context.close(promise: nil)
    }
}
