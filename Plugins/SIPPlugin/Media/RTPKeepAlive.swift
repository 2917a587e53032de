/// RTP keep-alive (RFC 6263) as a value state machine: while a call's stream sends nothing (held,
/// inactive, or an echo with nothing to echo), a NAT or relay in the path forgets our media
/// mapping; this keeps it by sending a keep-alive packet whenever nothing went out for
/// ``interval``. The I/O is outside: the media session sends what ``tick(at:)`` returns, from the
/// socket it receives on (symmetric RTP), and reports its own media with ``mediaSent(at:)``.
///
/// The packet is RFC 6263 §4.6's: "an RTP packet of 0 length with a dynamic payload type that
/// has not been negotiated by the peers", its sequence number one more each time, so a receiver
/// drops it ("a receiver MUST ignore packets with payload types that it does not understand",
/// RFC 3550) while every middlebox on the way refreshes its mapping.
///
/// Invariants: nothing is sent without a target (a negotiated far end with a port); at most one
/// packet per ``interval`` plus one per completed offer/answer (so a relay or NAT learns our
/// source address at once after a move or a NAT rebinding, before the far end's media arrives:
/// a relay such as rtpengine learns a stream's source anew after each exchange, and after a
/// rebinding nothing of the far end's reaches us to echo until we sent); the interval is
/// clamped to ``intervalRange``; the payload type is never one of the negotiated formats.
public struct RTPKeepAlive: Hashable, Sendable {
    public typealias Instant = ContinuousClock.Instant

    /// RFC 6263's Tr for UDP: 15 s (baresip's and linphone's default too), well inside the 30 s
    /// UDP timeout of common NATs.
    public static let defaultInterval = Duration.seconds(15)
    /// The interval's bounds: a caller's value is clamped into them.
    public static let intervalRange = Duration.milliseconds(200)...Duration.seconds(300)

    /// One packet to send from the media socket.
    public struct Packet: Hashable, Sendable {
        public var bytes: [UInt8]
        public var target: RTPEndpoint
    }

    public let interval: Duration
    public let ssrc: UInt32
    /// Where keep-alives go: the far end's latched media endpoint, nil when none.
    public private(set) var target: RTPEndpoint?
    /// The payload type the packets carry (dynamic, never negotiated).
    public private(set) var payloadType: Int = 127
    /// When we last sent anything on the stream (media or keep-alive).
    public private(set) var lastSent: Instant?
    public private(set) var sequence: UInt16
    /// Keep-alive packets sent so far.
    public private(set) var sentCount = 0

    /// - Parameters:
    ///   - interval: how long the stream may stay silent (clamped to ``intervalRange``).
    ///   - ssrc: our RTP synchronization source (random in production).
    ///   - sequence: our first RTP sequence number (random in production).
    public init(interval: Duration = Self.defaultInterval, ssrc: UInt32, sequence: UInt16) {
        self.interval = min(max(interval, Self.intervalRange.lowerBound), Self.intervalRange.upperBound)
        self.ssrc = ssrc
        self.sequence = sequence
    }

    /// When ``tick(at:)`` next has something to send, or nil while there is no target.
    public var nextDue: Instant? {
        guard target != nil else { return nil }
        return lastSent.map { $0 + interval }
    }

    /// A negotiation set the far end to `target`, with `negotiated` payload types in use: one
    /// keep-alive at once when there is a target, the same one as before included (a re-INVITE
    /// after a NAT rebinding keeps it, yet our public source changed).
    public mutating func retarget(_ target: RTPEndpoint?, negotiated: Set<Int>, at now: Instant) -> [Packet] {
        payloadType = (96...127).reversed().first { !negotiated.contains($0) } ?? 127
        self.target = target
        guard let target else { return [] }
        return [packet(to: target, at: now)]
    }

    /// The far end's media source was learnt (``RTPLatch``): keep-alives go there from now on,
    /// nothing is sent at once (the echo that learnt it goes out anyway).
    public mutating func follow(_ target: RTPEndpoint?) { self.target = target }

    /// Our own media left the socket at `now`: the stream is not silent.
    public mutating func mediaSent(at now: Instant) { lastSent = now }

    /// The timer fired (or any wake-up): a keep-alive when the stream was silent for ``interval``.
    public mutating func tick(at now: Instant) -> [Packet] {
        guard let target, let due = nextDue, now >= due else { return [] }
        return [packet(to: target, at: now)]
    }

    private mutating func packet(to target: RTPEndpoint, at now: Instant) -> Packet {
        sequence &+= 1
        sentCount += 1
        lastSent = now
        let s = sequence
        let id = ssrc
        // V=2, no padding, extension or CSRC; M=0; timestamp 0 (no media clock runs on a held stream).
        let bytes: [UInt8] =
            [0x80, UInt8(payloadType), UInt8(s >> 8), UInt8(s & 0xFF), 0, 0, 0, 0]
            + [UInt8(id >> 24), UInt8((id >> 16) & 0xFF), UInt8((id >> 8) & 0xFF), UInt8(id & 0xFF)]
        return Packet(bytes: bytes, target: target)
    }
}
