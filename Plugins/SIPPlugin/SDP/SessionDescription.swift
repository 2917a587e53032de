/// An SDP session description (RFC 8866, formerly RFC 4566), only what a VoIP client needs:
/// `v`, `o`, `s`, `c`, `t`, `m`, and the attributes `rtpmap`, `sendrecv`/`sendonly`/`recvonly`/
/// `inactive` and `rtcp-mux`. Other lines are skipped on parse and never written.
///
/// Invariants (kept by `parse(_:)` and by ``SDPOfferAnswer``): ports are in `0...65_535`,
/// payload types in `0...127`, the origin's session id and version are at most
/// ``maximumOriginNumber`` (so the version can always be incremented), at most
/// ``maximumMediaCount`` media sections with at most ``maximumFormatCount`` formats each.
public struct SessionDescription: Hashable, Sendable {
    /// The largest SDP body accepted, in bytes.
    public static let maximumSize = 16_384
    public static let maximumLineCount = 512
    public static let maximumMediaCount = 16
    public static let maximumFormatCount = 32
    /// 10^18 − 1: eighteen digits, so `version + 1` never overflows `UInt64`.
    public static let maximumOriginNumber: UInt64 = 999_999_999_999_999_999

    /// `IN IP4` or `IN IP6` (RFC 8866 §5.7).
    public enum AddressFamily: String, Hashable, Sendable {
        case ipv4 = "IP4"
        case ipv6 = "IP6"

        /// The family of a textual address (`:` means IPv6).
        public init(of address: String) { self = address.contains(":") ? .ipv6 : .ipv4 }
    }

    /// A `c=` (or the address part of `o=`): network type `IN`, family and address.
    public struct Connection: Hashable, Sendable {
        public var family: AddressFamily
        public var address: String

        public init(address: String) {
            self.family = AddressFamily(of: address)
            self.address = address
        }

        public init(family: AddressFamily, address: String) {
            self.family = family
            self.address = address
        }
    }

    /// The media direction attribute (RFC 3264 §5.1); `sendrecv` when absent.
    public enum Direction: String, Hashable, Sendable, CaseIterable {
        case sendrecv, sendonly, recvonly, inactive

        /// The same stream seen from the other side: what we send, they receive.
        public var reversed: Direction {
            switch self {
            case .sendonly: .recvonly
            case .recvonly: .sendonly
            case .sendrecv, .inactive: self
            }
        }

        /// Whether this side sends media.
        public var sends: Bool { self == .sendrecv || self == .sendonly }
        /// Whether this side receives media.
        public var receives: Bool { self == .sendrecv || self == .recvonly }

        public init(sends: Bool, receives: Bool) {
            switch (sends, receives) {
            case (true, true): self = .sendrecv
            case (true, false): self = .sendonly
            case (false, true): self = .recvonly
            case (false, false): self = .inactive
            }
        }
    }

    /// `o=`: the session's identity; only `version` changes over the session's life.
    public struct Origin: Hashable, Sendable {
        public var username: String
        public var sessionID: UInt64
        public var version: UInt64
        public var connection: Connection

        public init(username: String = "-", sessionID: UInt64, version: UInt64, connection: Connection) {
            self.username = username
            self.sessionID = sessionID
            self.version = version
            self.connection = connection
        }
    }

    /// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<channels>]`.
    public struct RTPMap: Hashable, Sendable {
        public var payloadType: Int
        public var encoding: String
        public var clockRate: Int
        public var channels: Int?

        public init(payloadType: Int, encoding: String, clockRate: Int, channels: Int? = nil) {
            self.payloadType = payloadType
            self.encoding = encoding
            self.clockRate = clockRate
            self.channels = channels
        }
    }

    /// One `m=` section with its own `c=` (optional) and attributes.
    public struct Media: Hashable, Sendable {
        public var kind: String
        /// 0 rejects the stream (RFC 3264 §6).
        public var port: Int
        public var transport: String
        /// Payload types (RTP) or format names, in preference order.
        public var formats: [String]
        public var connection: Connection?
        public var rtpMaps: [RTPMap]
        /// Explicit direction attribute, if any (else the session's, else sendrecv).
        public var direction: Direction?
        public var rtcpMux: Bool

        public init(
            kind: String = "audio", port: Int, transport: String = "RTP/AVP", formats: [String],
            connection: Connection? = nil, rtpMaps: [RTPMap] = [], direction: Direction? = nil,
            rtcpMux: Bool = false
        ) {
            self.kind = kind
            self.port = port
            self.transport = transport
            self.formats = formats
            self.connection = connection
            self.rtpMaps = rtpMaps
            self.direction = direction
            self.rtcpMux = rtcpMux
        }
    }

    public var origin: Origin
    public var sessionName: String
    /// Session-level `c=`, used by media sections without their own.
    public var connection: Connection?
    /// `t=` start and stop (0 0 for a VoIP session).
    public var timing: (start: UInt64, stop: UInt64) {
        get { (timingStart, timingStop) }
        set { (timingStart, timingStop) = newValue }
    }
    private var timingStart: UInt64 = 0
    private var timingStop: UInt64 = 0
    /// Session-level direction attribute, if any.
    public var direction: Direction?
    public var media: [Media]

    public init(
        origin: Origin, sessionName: String = "-", connection: Connection?, direction: Direction? = nil,
        media: [Media]
    ) {
        self.origin = origin
        self.sessionName = sessionName
        self.connection = connection
        self.direction = direction
        self.media = media
    }

    /// The direction in force for media section `index`: its own, else the session's, else sendrecv.
    public func direction(ofMedia index: Int) -> Direction {
        media.indices.contains(index) ? (media[index].direction ?? direction ?? .sendrecv) : .inactive
    }

    /// The connection in force for media section `index`: its own `c=`, else the session's.
    public func connection(ofMedia index: Int) -> Connection? {
        media.indices.contains(index) ? (media[index].connection ?? connection) : nil
    }

    /// The SDP text, CRLF line ends (RFC 8866 §5), in the order the RFC requires.
    public func serialized() -> String {
        var lines = ["v=0"]
        let o = origin
        lines.append(
            "o=\(o.username) \(o.sessionID) \(o.version) IN \(o.connection.family.rawValue) \(o.connection.address)")
        lines.append("s=\(sessionName.isEmpty ? "-" : sessionName)")
        if let connection { lines.append("c=IN \(connection.family.rawValue) \(connection.address)") }
        lines.append("t=\(timingStart) \(timingStop)")
        if let direction { lines.append("a=\(direction.rawValue)") }
        for section in media {
            lines.append(
                "m=\(section.kind) \(section.port) \(section.transport) \(section.formats.joined(separator: " "))")
            if let c = section.connection { lines.append("c=IN \(c.family.rawValue) \(c.address)") }
            for map in section.rtpMaps {
                let channels = map.channels.map { "/\($0)" } ?? ""
                lines.append("a=rtpmap:\(map.payloadType) \(map.encoding)/\(map.clockRate)\(channels)")
            }
            if section.rtcpMux { lines.append("a=rtcp-mux") }
            if let direction = section.direction { lines.append("a=\(direction.rawValue)") }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

/// Why an SDP body was rejected: the line (1-based), the field and what was wrong. Values from
/// the body are escaped before they reach `reason`, so the error is safe to log.
public struct SDPError: Error, Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var field: String
    public var reason: String

    public init(line: Int, field: String, _ reason: String) {
        self.line = line
        self.field = field
        self.reason = reason
    }

    public var description: String { "SDP line \(line), field \(field): \(reason)" }
}
