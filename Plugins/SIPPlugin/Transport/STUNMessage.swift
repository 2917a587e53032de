/// The STUN Binding transaction (RFC 5389) as a value codec: the keep-alive of a SIP flow over
/// UDP (RFC 5626 §4.4.1), sent on the SIP port, whose answer names the public address and port
/// the registrar sees (the NAT's mapping).
///
/// Invariants: encoding is fixed (a 20-byte header and a FINGERPRINT, 28 bytes); parsing reads
/// only within the datagram, looks at no more than ``maximumAttributes`` attributes of a message of
/// at most ``maximumLength`` bytes, and returns nil for anything else (it never traps on hostile
/// bytes); an address it returns is an IPv4 or IPv6 literal with a port in 1...65535.
enum STUNMessage {
    /// RFC 5389 §6: "The magic cookie field MUST contain the fixed value 0x2112A442 in network byte order."
    static let magicCookie: UInt32 = 0x2112_A442
    static let bindingRequest: UInt16 = 0x0001
    static let bindingSuccess: UInt16 = 0x0101
    static let bindingError: UInt16 = 0x0111
    /// A datagram longer than this is not a Binding answer.
    static let maximumLength = 1280
    static let maximumAttributes = 32

    /// A Binding request with `transactionID` (12 bytes) and a FINGERPRINT (RFC 5389 §15.5), which
    /// tells it apart from SIP on a shared port.
    static func bindingRequest(transactionID: [UInt8]) -> [UInt8] {
        precondition(transactionID.count == 12, "a STUN transaction ID has 96 bits")
        var bytes = be16(bindingRequest) + be16(8) + be32(magicCookie) + transactionID
        let fingerprint = crc32(bytes) ^ 0x5354_554E
        bytes += be16(0x8028) + be16(4) + be32(fingerprint)
        return bytes
    }

    /// Whether `bytes` can be a STUN message (RFC 5389 §6 and §7.3): the two top bits zero, a
    /// length that is a multiple of 4 and matches the datagram, and the magic cookie. SIP starts
    /// with a letter, so it never passes.
    static func looksLikeSTUN(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 20, bytes.count <= maximumLength, bytes[0] & 0xC0 == 0 else { return false }
        let length = Int(read16(bytes, 2))
        return length % 4 == 0 && length + 20 == bytes.count && read32(bytes, 4) == magicCookie
    }

    /// What a Binding answer says.
    struct BindingAnswer: Hashable, Sendable {
        var transactionID: [UInt8]
        /// `host:port` (IPv6 in brackets) of XOR-MAPPED-ADDRESS, else MAPPED-ADDRESS; nil in an
        /// error response or a success without either.
        var mapped: String?
    }

    /// The answer `bytes` carry, or nil when they are no well-formed Binding success or error response.
    static func parseBindingAnswer(_ bytes: [UInt8]) -> BindingAnswer? {
        guard looksLikeSTUN(bytes) else { return nil }
        let type = read16(bytes, 0)
        guard type == bindingSuccess || type == bindingError else { return nil }
        let transactionID = Array(bytes[8..<20])
        guard type == bindingSuccess else { return BindingAnswer(transactionID: transactionID, mapped: nil) }
        var offset = 20
        var xorMapped: String?
        var mapped: String?
        for _ in 0..<maximumAttributes where offset + 4 <= bytes.count {
            let kind = read16(bytes, offset)
            let length = Int(read16(bytes, offset + 2))
            let value = offset + 4
            guard value + length <= bytes.count else { return nil }
            let body = Array(bytes[value..<(value + length)])
            if kind == 0x0020 { xorMapped = address(body, xor: Array(bytes[4..<20])) }
            if kind == 0x0001 { mapped = address(body, xor: nil) }
            // RFC 5389 §15: attributes are padded to a multiple of 4 bytes.
            offset = value + (length + 3) / 4 * 4
        }
        return BindingAnswer(transactionID: transactionID, mapped: xorMapped ?? mapped)
    }

    /// A (XOR-)MAPPED-ADDRESS value (RFC 5389 §15.1, §15.2) as `host:port`; `xor` is the magic
    /// cookie and transaction ID for the XOR form.
    private static func address(_ body: [UInt8], xor: [UInt8]?) -> String? {
        guard body.count >= 8 else { return nil }
        let family = body[1]
        let length = family == 0x01 ? 4 : family == 0x02 ? 16 : 0
        guard length > 0, body.count >= 4 + length else { return nil }
        var port = read16(body, 2)
        var raw = Array(body[4..<(4 + length)])
        if let xor {
            port ^= UInt16(magicCookie >> 16)
            for index in raw.indices { raw[index] ^= xor[index] }
        }
        guard port > 0 else { return nil }
        if length == 4 { return raw.map(String.init).joined(separator: ".") + ":\(port)" }
        let groups = stride(from: 0, to: 16, by: 2).map {
            String(UInt16(raw[$0]) << 8 | UInt16(raw[$0 + 1]), radix: 16)
        }
        return "[" + groups.joined(separator: ":") + "]:\(port)"
    }

    private static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    private static func be32(_ value: UInt32) -> [UInt8] { be16(UInt16(value >> 16)) + be16(UInt16(value & 0xFFFF)) }
    private static func read16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1]) }
    private static func read32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(read16(bytes, at)) << 16 | UInt32(read16(bytes, at + 2))
    }

    /// CRC-32 (ISO 3309, the FINGERPRINT's), bitwise.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
