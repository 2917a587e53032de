internal import NIOCore
internal import NIOPosix
public import ResilienceCore
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
/// Symmetric RTP (RFC 4961): the echo and every keep-alive leave from the socket media arrives
/// on, and go only to the far end's latched source (``RTPLatch``): the negotiated address and
/// port, or, for a far end behind a port-changing NAT whose signalled address never sends, the
/// first source of two authentic in-sequence packets. A datagram from anyone else is dropped and
/// counted (``packetsFromStrangers``), so the session is never a relay: an echo only ever goes
/// back to the address it came from. The latch moves only with a new offer/answer
/// (``negotiated(_:)``) or by that bounded learning before the far end confirmed it, never once
/// confirmed; the call refuses offers whose target ``MediaTarget`` refuses (488).
///
/// Keep-alive (RFC 6263, ``RTPKeepAlive``): whenever the stream sent nothing for the keep-alive
/// interval (held, inactive, or nothing to echo), one empty RTP packet of an unnegotiated
/// payload type goes to the latched far end, and one at once when the far end changes, so a NAT
/// or relay keeps (or learns) our media mapping. Its timer sleeps on the session's clock and
/// wakes at most once per interval.
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
    private let counters: RTPCounters
    private let clock: any RuntimeClock
    private var channel: (any Channel)?
    private var keepAliveTask: Task<Void, Never>?
    /// The address the socket is bound to, as given (without port).
    public private(set) var localAddress: String?
    /// The interface holding ``localAddress`` when the socket was made, which the socket is bound
    /// to (`SO_BINDTOIFINDEX`), so media leaves over the link the call's signalling chose even
    /// while another link without carrier keeps a better route; nil: bound to the address only.
    private var boundInterface: Int32?
    public private(set) var localPort: Int?
    private var formats: [SessionDescription.RTPMap]

    /// - Parameters:
    ///   - mode: echo to the negotiated remote, or sink.
    ///   - formats: payload types offered, in preference order (PCMU by default).
    ///   - keepAliveInterval: how long the stream may stay silent before a keep-alive (RFC 6263's
    ///     Tr, 15 s by default; clamped to ``RTPKeepAlive/intervalRange``).
    ///   - clock: the clock the keep-alive timer sleeps on.
    public init(
        mode: Mode = .echo,
        formats: [SessionDescription.RTPMap] = [.init(payloadType: 0, encoding: "PCMU", clockRate: 8_000)],
        keepAliveInterval: Duration = RTPKeepAlive.defaultInterval, clock: any RuntimeClock = ContinuousClock()
    ) {
        self.mode = mode
        self.formats = formats
        self.clock = clock
        counters = RTPCounters(
            keepAlive: RTPKeepAlive(
                interval: keepAliveInterval, ssrc: .random(in: 1...UInt32.max), sequence: .random(in: 0...UInt16.max)),
            clock: clock)
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
    /// Where the far end's media comes from and the echo goes (``RTPLatch/latched``), nil before
    /// a negotiation.
    public var latchedSource: RTPEndpoint? { counters.snapshot.latch.latched }
    /// RFC 6263 keep-alive packets sent so far.
    public var keepAlivesSent: Int { counters.snapshot.keepAlive.sentCount }

    /// Binds on `localAddress` first when the socket is elsewhere (or closed); one audio section.
    /// - Parameters:
    ///   - localAddress: the call's current address.
    ///   - direction: written into the section (the offer/answer rules overwrite it).
    ///   - offer: unused: the same formats are offered and answered.
    public func describe(
        localAddress: String, direction: SessionDescription.Direction, answering offer: SessionDescription?
    ) async throws -> [SessionDescription.Media] {
        if self.localAddress != localAddress || channel?.isActive != true
            || boundInterface != InterfaceBinding.interface(holding: localAddress)
        {
            try await rebind(to: localAddress)
        }
        let port = localPort ?? 0
        return [
            SessionDescription.Media(
                port: port, formats: formats.map { "\($0.payloadType)" }, rtpMaps: formats, direction: direction)
        ]
    }

    public func negotiated(_ media: NegotiatedMedia) async throws {
        _ = try SocketAddress(ipAddress: media.remoteAddress, port: media.remotePort)
        let remote = media.remotePort != 0 ? RTPEndpoint(address: media.remoteAddress, port: media.remotePort) : nil
        var types = Set(formats.map(\.payloadType))
        if let agreed = media.payloadType.flatMap({ Int($0) }) { types.insert(agreed) }
        send(counters.negotiated(remote, payloadTypes: types, sends: media.direction.sends))
        if remote != nil { startKeepAlive() }
    }

    /// Starts the keep-alive timer unless it runs: it sleeps on the session's clock until the
    /// stream has been silent for the interval, sends, and ends when there is no far end (a new
    /// negotiation starts it again) or on ``close()``. It holds the session only weakly, so a
    /// session dropped without ``close()`` stops it at its next wake-up.
    private func startKeepAlive() {
        guard keepAliveTask == nil else { return }
        let clock = self.clock
        keepAliveTask = Task { [weak self] in
            while let due = await self?.keepAliveDueOrStop() {
                do { try await clock.sleep(until: due, tolerance: nil) } catch { return }
                await self?.keepAliveTick()
            }
        }
    }

    /// The next keep-alive's instant; nil when the timer should end (cancelled by ``close()``,
    /// or no far end: then it is forgotten in the same turn, so a negotiation after it starts a
    /// new one).
    private func keepAliveDueOrStop() -> ContinuousClock.Instant? {
        if Task.isCancelled { return nil }
        guard let due = counters.snapshot.keepAlive.nextDue else {
            keepAliveTask = nil
            return nil
        }
        return due
    }

    private func keepAliveTick() { send(counters.keepAliveTick(at: clock.now)) }

    /// Sends keep-alive packets from the current socket (symmetric RTP: the port we receive on).
    private func send(_ packets: [RTPKeepAlive.Packet]) {
        guard let channel, channel.isActive else { return }
        for packet in packets {
            guard let to = try? SocketAddress(ipAddress: packet.target.address, port: packet.target.port) else {
                continue
            }
            let envelope = AddressedEnvelope(remoteAddress: to, data: ByteBuffer(bytes: packet.bytes))
            channel.writeAndFlush(envelope, promise: nil)
        }
    }

    /// Binds a new socket on `address` (kernel-chosen port) and the interface holding it, then
    /// closes the old one.
    public func rebind(to address: String) async throws {
        let local = try SocketAddress(ipAddress: address, port: 0)
        let handler = RTPEchoHandler(counters: counters, mode: mode, localAddress: address)
        let interface = InterfaceBinding.interface(holding: address)
        let fresh = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bound(toInterface: interface)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            .bind(to: local).get()
        let old = channel
        channel = fresh
        localAddress = address
        boundInterface = interface
        localPort = fresh.localAddress?.port
        try? await old?.close()
    }

    public func close() async {
        keepAliveTask?.cancel()
        keepAliveTask = nil
        let old = channel
        channel = nil
        localAddress = nil
        boundInterface = nil
        localPort = nil
        _ = counters.negotiated(nil, payloadTypes: [], sends: false)
        try? await old?.close()
    }
}

/// Counts, the latch and the keep-alive state, shared by the session (reads, negotiations,
/// timer) and its socket's handler (each datagram, on a NIO thread).
final class RTPCounters: Sendable {
    struct Snapshot: Sendable {
        var received = 0
        var echoed = 0
        var byAddress: [String: Int] = [:]
        var strangers = 0
        var lastSource: String?
        var latch = RTPLatch()
        var keepAlive: RTPKeepAlive
        var sends = false
    }

    private let state: Mutex<Snapshot>
    private let clock: any RuntimeClock

    init(keepAlive: RTPKeepAlive, clock: any RuntimeClock) {
        state = Mutex(Snapshot(keepAlive: keepAlive))
        self.clock = clock
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    /// A new negotiation: the latch restarts at `remote`; returns the keep-alive to send at once
    /// when the far end moved.
    func negotiated(_ remote: RTPEndpoint?, payloadTypes: Set<Int>, sends: Bool) -> [RTPKeepAlive.Packet] {
        let now = clock.now
        return state.withLock { state in
            state.latch.negotiated(remote, payloadTypes: payloadTypes)
            state.sends = sends
            return state.keepAlive.retarget(remote, negotiated: payloadTypes, at: now)
        }
    }

    func keepAliveTick(at now: ContinuousClock.Instant) -> [RTPKeepAlive.Packet] {
        state.withLock { $0.keepAlive.tick(at: now) }
    }

    /// Records one packet; returns where to echo it: the far end, when the packet came from its
    /// latched source and we send to it (nil: sink it).
    func received(on local: String, from source: SocketAddress, header: RTPHeader?) -> SocketAddress? {
        let from = RTPEndpoint(address: source.ipAddress ?? "?", port: source.port ?? 0)
        return state.withLock { state in
            state.received += 1
            state.byAddress[local, default: 0] += 1
            state.lastSource = "\(from.address):\(from.port)"
            guard case .farEnd = state.latch.received(header, from: from) else {
                state.strangers += 1
                return nil
            }
            if state.latch.latched != state.keepAlive.target {
                // Learnt a far end behind a NAT: keep-alives follow it (the echo goes out now).
                state.keepAlive.follow(state.latch.latched)
            }
            return state.sends ? source : nil
        }
    }

    func echoed() {
        let now = clock.now
        state.withLock {
            $0.echoed += 1
            $0.keepAlive.mediaSent(at: now)
        }
    }
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
        let header = envelope.data.getBytes(at: envelope.data.readerIndex, length: min(envelope.data.readableBytes, 76))
            .flatMap { RTPHeader($0) }
        let remote = counters.received(on: localAddress, from: envelope.remoteAddress, header: header)
        guard mode == .echo, let remote, envelope.data.readableBytes <= RTPEchoSession.maximumPacketSize else { return }
        counters.echoed()
        context.writeAndFlush(
            wrapOutboundOut(AddressedEnvelope(remoteAddress: remote, data: envelope.data)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP unreachable from a far end that is gone: keep the socket; media resumes on renegotiation.
    }
}
