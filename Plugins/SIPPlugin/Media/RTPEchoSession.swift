internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// A built-in ``MediaSession`` for headless use (the daemon, tests): it binds one UDP RTP port on
/// the call's local address (IPv4 or IPv6), counts what arrives and where, and echoes it to the
/// negotiated remote or sinks it.
///
/// Invariants: at most one socket is open at a time; ``rebind(to:)`` (and `describe` for a new
/// address) opens the new socket before closing the old one, so the port in the last `m=` is
/// always open; a datagram larger than ``maximumPacketSize`` is counted but never echoed; nothing
/// is echoed before a remote is negotiated, nor while the negotiated direction does not send.
///
/// Symmetric RTP (RFC 4961), latched to the negotiated address: only a datagram whose source is
/// exactly the negotiated address and port is echoed; one from anyone else is dropped and
/// counted (``packetsFromStrangers``), so the session is never a relay: an echo only ever goes
/// back to the address it came from. The latch moves only with a new offer/answer
/// (``negotiated(_:)``), never with the traffic; the call refuses offers whose target
/// ``MediaTarget`` refuses (488).
public actor RTPEchoSession: MediaSession {
    /// What to do with a packet that arrives.
    public enum Mode: String, Hashable, Sendable {
        /// Send it back to the negotiated remote (a loop the far end can hear).
        case echo
        /// Count it and drop it.
        case sink
    }

    /// The largest datagram echoed, in bytes (an RTP packet on a 1500-byte MTU fits).
    public static let maximumPacketSize = 1_500

    public let mode: Mode
    private let counters = RTPCounters()
    private var channel: (any Channel)?
    /// The address the socket is bound to, as given (without port).
    public private(set) var localAddress: String?
    public private(set) var localPort: Int?
    private var formats: [SessionDescription.RTPMap]

    /// - Parameters:
    ///   - mode: echo to the negotiated remote, or sink.
    ///   - formats: payload types offered, in preference order (PCMU by default).
    public init(
        mode: Mode = .echo,
        formats: [SessionDescription.RTPMap] = [.init(payloadType: 0, encoding: "PCMU", clockRate: 8_000)]
    ) {
        self.mode = mode
        self.formats = formats
    }

    /// Packets received in all, on any address this session was bound to.
    public var packetsReceived: Int { counters.snapshot.received }
    /// Packets echoed to the negotiated remote.
    public var packetsEchoed: Int { counters.snapshot.echoed }
    /// Packets received per local address they arrived on.
    public var packetsReceivedByAddress: [String: Int] { counters.snapshot.byAddress }
    /// Packets from anyone but the negotiated far end (or before one was negotiated): dropped.
    public var packetsFromStrangers: Int { counters.snapshot.strangers }
    /// The source of the last packet, as `address:port` text.
    public var lastSource: String? { counters.snapshot.lastSource }

    /// Binds on `localAddress` first when the socket is elsewhere (or closed); one audio section.
    /// - Parameters:
    ///   - localAddress: the call's current address.
    ///   - direction: written into the section (the offer/answer rules overwrite it).
    ///   - offer: unused: the same formats are offered and answered.
    public func describe(
        localAddress: String, direction: SessionDescription.Direction, answering offer: SessionDescription?
    ) async throws -> [SessionDescription.Media] {
        if self.localAddress != localAddress || channel?.isActive != true { try await rebind(to: localAddress) }
        let port = localPort ?? 0
        return [
            SessionDescription.Media(
                port: port, formats: formats.map { "\($0.payloadType)" }, rtpMaps: formats, direction: direction)
        ]
    }

    public func negotiated(_ media: NegotiatedMedia) async throws {
        let remote = try SocketAddress(ipAddress: media.remoteAddress, port: media.remotePort)
        counters.setRemote(media.remotePort != 0 ? remote : nil, sends: media.direction.sends)
    }

    /// Binds a new socket on `address` (kernel-chosen port), then closes the old one.
    public func rebind(to address: String) async throws {
        let local = try SocketAddress(ipAddress: address, port: 0)
        let handler = RTPEchoHandler(counters: counters, mode: mode, localAddress: address)
        let fresh = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            .bind(to: local).get()
        let old = channel
        channel = fresh
        localAddress = address
        localPort = fresh.localAddress?.port
        try? await old?.close()
    }

    public func close() async {
        let old = channel
        channel = nil
        localAddress = nil
        localPort = nil
        counters.setRemote(nil, sends: false)
        try? await old?.close()
    }
}

/// Counts shared by the session (reads) and its socket's handler (writes on a NIO thread).
final class RTPCounters: Sendable {
    struct Snapshot: Sendable {
        var received = 0
        var echoed = 0
        var byAddress: [String: Int] = [:]
        var strangers = 0
        var lastSource: String?
        /// The negotiated far end (the latch), and whether we send to it.
        var remote: SocketAddress?
        var sends = false
    }

    private let state = Mutex(Snapshot())

    var snapshot: Snapshot { state.withLock { $0 } }

    func setRemote(_ remote: SocketAddress?, sends: Bool) { state.withLock { ($0.remote, $0.sends) = (remote, sends) } }

    /// Records one packet; returns where to echo it: the far end, when the packet came from
    /// exactly there and we send to it (nil: sink it).
    func received(on local: String, from source: SocketAddress) -> SocketAddress? {
        state.withLock { state in
            state.received += 1
            state.byAddress[local, default: 0] += 1
            state.lastSource = "\(source.ipAddress ?? "?"):\(source.port ?? 0)"
            guard let remote = state.remote, source.ipAddress == remote.ipAddress, source.port == remote.port else {
                state.strangers += 1
                return nil
            }
            return state.sends ? remote : nil
        }
    }

    func echoed() { state.withLock { $0.echoed += 1 } }
}

final class RTPEchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let counters: RTPCounters
    let mode: RTPEchoSession.Mode
    let localAddress: String

    init(counters: RTPCounters, mode: RTPEchoSession.Mode, localAddress: String) {
        self.counters = counters
        self.mode = mode
        self.localAddress = localAddress
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let remote = counters.received(on: localAddress, from: envelope.remoteAddress)
        guard mode == .echo, let remote, envelope.data.readableBytes <= RTPEchoSession.maximumPacketSize else { return }
        counters.echoed()
        context.writeAndFlush(
            wrapOutboundOut(AddressedEnvelope(remoteAddress: remote, data: envelope.data)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP unreachable from a far end that is gone: keep the socket; media resumes on renegotiation.
    }
}
