/// The record types the SIP resolver asks for (RFC 1035, RFC 3596, RFC 2782, RFC 3403).
enum DNSRecordType: UInt16, Hashable, Sendable {
    case a = 1
    case cname = 5
    case aaaa = 28
    case srv = 33
    case naptr = 35
}

/// What a record says, for the types the resolver uses; any other type is `.other`.
enum DNSRecordData: Hashable, Sendable {
    case a(String)
    case aaaa(String)
    case cname(String)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: String)
    case naptr(order: UInt16, preference: UInt16, flags: String, service: String, regexp: String, replacement: String)
    case other(type: UInt16)
}

/// One resource record of an answer or additional section.
struct DNSRecord: Hashable, Sendable {
    /// The owner name, lower-cased, without the trailing dot.
    var name: String
    /// Seconds the record may be cached (the sender's; callers clamp it).
    var ttl: UInt32
    var data: DNSRecordData
}

/// Why a message could not be read. Anything from the wire is hostile: every length is checked
/// against the message, every repetition is bounded.
enum DNSParseError: Error, Hashable, Sendable {
    case truncatedMessage
    case compressionLoop
    case nameTooLong
    case tooManyRecords
    case notAResponse
    case invalidName(String)
}

/// A DNS message (RFC 1035 §4) as a value: a query to send, or a response read with bounded
/// parsing.
///
/// Invariants: a parsed name has at most 255 octets and 127 labels; a compression pointer must
/// point before the name it continues (so no chain of pointers can loop) and at most
/// ``maximumPointers`` are followed per name; at most ``maximumRecords`` records are read per
/// section; a message shorter than its counts say is refused, never read past its end.
struct DNSMessage: Hashable, Sendable {
    static let maximumPointers = 32
    static let maximumRecords = 256

    var id: UInt16
    var isResponse: Bool
    /// TC: the answer did not fit (RFC 1035 §4.1.1).
    var isTruncated: Bool
    /// RCODE: 0 no error, 2 server failure, 3 name error (NXDOMAIN).
    var responseCode: UInt8
    var questions: [(name: String, type: UInt16)] = []
    var answers: [DNSRecord] = []
    var additionals: [DNSRecord] = []

    static func == (lhs: DNSMessage, rhs: DNSMessage) -> Bool {
        lhs.id == rhs.id && lhs.isResponse == rhs.isResponse && lhs.isTruncated == rhs.isTruncated
            && lhs.responseCode == rhs.responseCode && lhs.answers == rhs.answers && lhs.additionals == rhs.additionals
            && lhs.questions.map(\.name) == rhs.questions.map(\.name)
            && lhs.questions.map(\.type) == rhs.questions.map(\.type)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(answers)
    }

    /// The UDP payload size a query advertises (RFC 6891 §6.2.5; 1,232 bytes fits every path's
    /// MTU without fragments, the DNS Flag Day 2020 value).
    static let advertisedPayloadSize: UInt16 = 1_232

    /// A recursive query (RD set) for `name` and `type`, with an EDNS0 OPT record advertising
    /// ``advertisedPayloadSize`` (RFC 6891 §6.1.2: root owner, type 41, the size as its CLASS).
    /// - Throws: ``DNSParseError/invalidName(_:)`` for a name that is not a host name.
    static func query(id: UInt16, name: String, type: DNSRecordType) throws(DNSParseError) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1]
        bytes += try encode(name: name)
        bytes += [UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xff), 0, 1]
        let size = advertisedPayloadSize
        bytes += [0, 0, 41, UInt8(size >> 8), UInt8(size & 0xff), 0, 0, 0, 0, 0, 0]
        return bytes
    }

    /// The ID and TC bit of a message's header, read without parsing the rest; nil when shorter
    /// than a header.
    static func header(of bytes: [UInt8]) -> (id: UInt16, isTruncated: Bool)? {
        guard bytes.count >= 12 else { return nil }
        return (UInt16(bytes[0]) << 8 | UInt16(bytes[1]), bytes[2] & 0x02 != 0)
    }

    /// `name` in wire form: labels of 1–63 octets of letters, digits, `-` and `_`, 253 in all.
    static func encode(name: String) throws(DNSParseError) -> [UInt8] {
        let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
        guard !trimmed.isEmpty, trimmed.utf8.count <= 253 else { throw .invalidName(String(name.prefix(64))) }
        var bytes: [UInt8] = []
        for label in trimmed.split(separator: ".", omittingEmptySubsequences: false) {
            let octets = Array(label.utf8)
            let allowed = octets.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2d
                    || byte == 0x5f
            }
            guard (1...63).contains(octets.count), allowed else { throw .invalidName(String(name.prefix(64))) }
            bytes.append(UInt8(octets.count))
            bytes += octets
        }
        return bytes + [0]
    }

    /// Reads a response. Its records are read only as far as the types above need.
    init(parsing bytes: [UInt8]) throws(DNSParseError) {
        var reader = DNSReader(bytes: bytes)
        id = try reader.u16()
        let flags = try reader.u16()
        isResponse = flags & 0x8000 != 0
        isTruncated = flags & 0x0200 != 0
        responseCode = UInt8(flags & 0x000f)
        let counts = [try reader.u16(), try reader.u16(), try reader.u16(), try reader.u16()]
        guard isResponse else { throw .notAResponse }
        guard counts.allSatisfy({ Int($0) <= Self.maximumRecords }) else { throw .tooManyRecords }
        for _ in 0..<counts[0] {
            let name = try reader.name()
            let type = try reader.u16()
            _ = try reader.u16()
            questions.append((name, type))
        }
        // A truncated answer may end mid-record: keep what was whole.
        do {
            for _ in 0..<counts[1] { answers.append(try reader.record()) }
            for _ in 0..<counts[2] { _ = try reader.record() }
            for _ in 0..<counts[3] { additionals.append(try reader.record()) }
        } catch .truncatedMessage where isTruncated {}
    }
}

/// A cursor over a message's bytes; every read checks the bounds.
struct DNSReader {
    let bytes: [UInt8]
    var offset = 0

    mutating func u8() throws(DNSParseError) -> UInt8 {
        guard offset < bytes.count else { throw .truncatedMessage }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() throws(DNSParseError) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }

    mutating func u32() throws(DNSParseError) -> UInt32 { UInt32(try u16()) << 16 | UInt32(try u16()) }

    mutating func take(_ count: Int) throws(DNSParseError) -> ArraySlice<UInt8> {
        guard count >= 0, offset + count <= bytes.count else { throw .truncatedMessage }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A `<character-string>` (RFC 1035 §3.3): a length octet and that many octets.
    mutating func characterString() throws(DNSParseError) -> String {
        let length = Int(try u8())
        return String(decoding: try take(length), as: UTF8.self)
    }

    /// A domain name, lower-cased, compression followed (RFC 1035 §4.1.4). A pointer must point
    /// before the place it was read from, so a chain of pointers strictly decreases and ends.
    mutating func name() throws(DNSParseError) -> String {
        var labels: [String] = []
        var length = 0
        var position = offset
        var jumped = false
        var pointers = 0
        while true {
            guard position < bytes.count else { throw .truncatedMessage }
            let size = Int(bytes[position])
            switch size & 0xc0 {
            case 0xc0:
                guard position + 1 < bytes.count else { throw .truncatedMessage }
                let target = (size & 0x3f) << 8 | Int(bytes[position + 1])
                pointers += 1
                guard target < position, pointers <= DNSMessage.maximumPointers else { throw .compressionLoop }
                if !jumped { offset = position + 2 }
                jumped = true
                position = target
            case 0x00:
                if size == 0 {
                    if !jumped { offset = position + 1 }
                    return labels.joined(separator: ".").lowercased()
                }
                guard position + 1 + size <= bytes.count else { throw .truncatedMessage }
                length += size + 1
                guard length <= 255, labels.count < 127 else { throw .nameTooLong }
                labels.append(String(decoding: bytes[(position + 1)..<(position + 1 + size)], as: UTF8.self))
                position += 1 + size
            default:
                throw .invalidName("label type \(size >> 6)")
            }
        }
    }

    /// One resource record; its data is read within its RDLENGTH.
    mutating func record() throws(DNSParseError) -> DNSRecord {
        let owner = try name()
        let type = try u16()
        _ = try u16()
        let ttl = try u32()
        let length = Int(try u16())
        let end = offset + length
        guard end <= bytes.count else { throw .truncatedMessage }
        let data: DNSRecordData
        switch DNSRecordType(rawValue: type) {
        case .a where length == 4:
            data = .a(try take(4).map { String($0) }.joined(separator: "."))
        case .aaaa where length == 16:
            data = .aaaa(Self.ipv6Text(Array(try take(16))))
        case .cname:
            data = .cname(try name())
        case .srv:
            data = .srv(priority: try u16(), weight: try u16(), port: try u16(), target: try name())
        case .naptr:
            data = .naptr(
                order: try u16(), preference: try u16(), flags: try characterString().lowercased(),
                service: try characterString().lowercased(), regexp: try characterString(), replacement: try name())
        default:
            data = .other(type: type)
        }
        // RDLENGTH rules: a record whose data overran it is malformed.
        guard offset <= end else { throw .truncatedMessage }
        offset = end
        return DNSRecord(name: owner, ttl: ttl, data: data)
    }

    /// RFC 5952 text of 16 octets: lower-case hex, the longest run of two or more zero groups as `::`.
    static func ipv6Text(_ octets: [UInt8]) -> String {
        let groups = (0..<8).map { UInt16(octets[$0 * 2]) << 8 | UInt16(octets[$0 * 2 + 1]) }
        var best = (start: -1, count: 0)
        var run = (start: -1, count: 0)
        for (index, group) in groups.enumerated() {
            if group == 0 {
                run = run.start < 0 ? (index, 1) : (run.start, run.count + 1)
                if run.count > best.count { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.count >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.count)...].joined(separator: ":")
        return head + "::" + tail
    }
}
