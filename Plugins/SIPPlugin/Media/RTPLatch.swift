/// A UDP endpoint of a media stream: an IP literal (IPv4 or IPv6, without brackets) and a port.
public struct RTPEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: String
    public var port: Int

    public init(address: String, port: Int) {
        self.address = address
        self.port = port
    }

    /// `address:port`, or `[address]:port` for IPv6 (RFC 3986 §3.2.2).
    public var description: String { address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)" }
}

/// The fixed RTP header fields a latch and a keep-alive need (RFC 3550 §5.1), read from a datagram.
public struct RTPHeader: Hashable, Sendable {
    public var payloadType: Int
    public var sequence: UInt16
    public var ssrc: UInt32

    public init(payloadType: Int, sequence: UInt16, ssrc: UInt32) {
        self.payloadType = payloadType
        self.sequence = sequence
        self.ssrc = ssrc
    }

    /// The header of `bytes`, or nil when they are not an RTP packet by RFC 3550 A.1's header
    /// checks: at least 12 bytes plus 4 per CSRC, version 2, and a payload type outside 72...76
    /// (those are RTCP's SR, RR, SDES, BYE and APP with the marker bit set).
    public init?(_ bytes: some Collection<UInt8>) {
        let head = Array(bytes.prefix(12))
        guard head.count == 12, head[0] >> 6 == 2 else { return nil }
        let csrcCount = Int(head[0] & 0x0F)
        guard bytes.count >= 12 + 4 * csrcCount else { return nil }
        payloadType = Int(head[1] & 0x7F)
        guard !(72...76).contains(payloadType) else { return nil }
        sequence = UInt16(head[2]) << 8 | UInt16(head[3])
        ssrc = head[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

/// Symmetric RTP (RFC 4961) towards a far end that may sit behind a NAT: which source's packets
/// count as the far end's, so the echo (and our media) goes back to exactly where they came from.
/// A value state machine: the media session feeds it each negotiation and each datagram's source.
///
/// Rules, per negotiation (``negotiated(_:payloadTypes:)``):
/// - The latch starts at the address and port the far end signalled in SDP; packets from there
///   are the far end's, and the first authentic one closes learning.
/// - Until then, a far end behind a port-changing NAT is learnt: the first source that sends
///   ``minimumSequential`` authentic packets in sequence (same SSRC, each sequence number one
///   more than the last) becomes the latch; learning then closes. Authentic means an RTP header
///   (``RTPHeader``) whose payload type is one negotiated. RFC 3550 A.1: "Source is not valid
///   until MIN_SEQUENTIAL packets with sequential sequence numbers have been received", with
///   MIN_SEQUENTIAL = 2.
/// - Learning is bounded: at most ``learningLimit`` authentic packets from other sources are
///   examined per negotiation; junk (not RTP, or a payload type not negotiated) is never examined.
/// - Once learning closed, every other source is a stranger until the next negotiation: the
///   latch never follows traffic mid-call, so nobody can steal a confirmed stream, and the echo
///   only ever goes back to the address its datagram came from (never a relay to a third party).
public struct RTPLatch: Hashable, Sendable {
    /// RFC 3550 A.1's MIN_SEQUENTIAL.
    public static let minimumSequential = 2
    /// Authentic packets from sources other than the latch examined per negotiation, at most.
    public static let learningLimit = 64

    /// What a datagram is.
    public enum Verdict: Hashable, Sendable {
        /// From the far end (the latch): media goes back there.
        case farEnd(RTPEndpoint)
        /// From anyone else, or before anything was negotiated: dropped and counted.
        case stranger
    }

    /// Where the far end said it receives (SDP `c=`/`m=`), nil before a negotiation or when declined.
    public private(set) var signalled: RTPEndpoint?
    /// Where the far end's media comes from and ours goes: the signalled endpoint, or the source learnt.
    public private(set) var latched: RTPEndpoint?
    /// Whether learning closed (the latch sent authentic media, or the limit was reached).
    public private(set) var isConfirmed = false
    private var payloadTypes: Set<Int> = []
    private var candidate: Candidate?
    private var examined = 0

    /// A source being learnt: its SSRC, last sequence number and how many in sequence so far.
    private struct Candidate: Hashable, Sendable {
        var source: RTPEndpoint
        var ssrc: UInt32
        var sequence: UInt16
        var count: Int
    }

    public init() {}

    /// A new offer/answer exchange completed: the latch restarts at `remote` (nil: no media) and
    /// learns again; `payloadTypes` are the ones authentic packets may carry.
    public mutating func negotiated(_ remote: RTPEndpoint?, payloadTypes: Set<Int>) {
        signalled = remote
        latched = remote
        isConfirmed = remote == nil
        self.payloadTypes = payloadTypes
        candidate = nil
        examined = 0
    }

    /// Judges one datagram from `source` whose first bytes parsed as `header` (nil: not RTP).
    public mutating func received(_ header: RTPHeader?, from source: RTPEndpoint) -> Verdict {
        guard let latched else { return .stranger }
        let authentic = header.map { payloadTypes.contains($0.payloadType) } ?? false
        if source == latched {
            if authentic { isConfirmed = true }
            return .farEnd(latched)
        }
        guard !isConfirmed, authentic, let header else { return .stranger }
        examined += 1
        if var current = candidate, current.source == source, current.ssrc == header.ssrc,
            header.sequence == current.sequence &+ 1
        {
            current.sequence = header.sequence
            current.count += 1
            candidate = current
            if current.count >= Self.minimumSequential {
                self.latched = source
                isConfirmed = true
                candidate = nil
                return .farEnd(source)
            }
        } else {
            candidate = Candidate(source: source, ssrc: header.ssrc, sequence: header.sequence, count: 1)
        }
        if examined >= Self.learningLimit {
            isConfirmed = true
            candidate = nil
        }
        return .stranger
    }
}
