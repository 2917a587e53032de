import Testing

@testable import SIPPlugin

/// The DNS codec of the RFC 3263 resolver: queries as RFC 1035 §4.1 lays them out, answers read
/// with bounds, compression loops refused.
@Suite
struct DNSMessageTests {
    /// A response header: ID, QR+RD+RA, counts.
    static func header(id: UInt16 = 0x1234, flags: UInt16 = 0x8180, counts: [UInt16]) -> [UInt8] {
        [UInt8(id >> 8), UInt8(id & 0xff), UInt8(flags >> 8), UInt8(flags & 0xff)]
            + counts.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    static func name(_ text: String) -> [UInt8] { (try? DNSMessage.encode(name: text)) ?? [] }

    static func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }

    /// RFC 6891 §6.1.2: the OPT record's "NAME MUST be 0 (root domain)", TYPE 41, and "CLASS:
    /// requestor's UDP payload size"; §6.1.3: the extended RCODE, VERSION and flags in the TTL.
    @Test func aQueryIsAHeaderWithRecursionDesiredOneQuestionAndAnEDNS0Record() throws {
        let bytes = try DNSMessage.query(id: 0xabcd, name: "_sip._udp.lab.test", type: .srv)
        #expect(Array(bytes.prefix(12)) == [0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1])
        #expect(Array(bytes.dropFirst(12).prefix(5)) == [4, 0x5f, 0x73, 0x69, 0x70])
        #expect(Array(bytes.suffix(15).prefix(4)) == [0, 33, 0, 1])
        #expect(Array(bytes.suffix(11)) == [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0], "OPT, 1,232 bytes")
    }

    @Test func aNameThatIsNotAHostNameIsNotSent() {
        #expect(throws: DNSParseError.self) { try DNSMessage.query(id: 1, name: "a..b", type: .a) }
        #expect(throws: DNSParseError.self) { try DNSMessage.query(id: 1, name: "bad name", type: .a) }
        #expect(throws: DNSParseError.self) {
            try DNSMessage.query(id: 1, name: String(repeating: "a", count: 64) + ".test", type: .a)
        }
    }

    @Test func anSRVAnswerWithACompressedTargetAndItsAddressIsRead() throws {
        // Question at offset 12: _sip._udp.lab.test; "lab.test" starts at offset 12 + 5 + 5 = 22.
        var bytes = Self.header(counts: [1, 1, 0, 1])
        bytes += Self.name("_sip._udp.lab.test") + [0, 33, 0, 1]
        // Answer: owner = pointer to the question (0xc00c), SRV, IN, TTL 300.
        let target = [7] + Array("primary".utf8) + [0xc0, 22]
        bytes += [0xc0, 12] + [0, 33, 0, 1] + [0, 0, 1, 44] + Self.u16(6 + target.count)
        bytes += Self.u16(10) + Self.u16(5) + Self.u16(5060) + target
        // Additional: primary.lab.test A 198.19.255.1, TTL 60.
        bytes += [7] + Array("primary".utf8) + [0xc0, 22] + [0, 1, 0, 1] + [0, 0, 0, 60] + [0, 4, 198, 19, 255, 1]
        let message = try DNSMessage(parsing: bytes)
        #expect(message.id == 0x1234 && message.isResponse && message.responseCode == 0)
        #expect(message.questions.first?.name == "_sip._udp.lab.test")
        #expect(
            message.answers == [
                DNSRecord(
                    name: "_sip._udp.lab.test", ttl: 300,
                    data: .srv(priority: 10, weight: 5, port: 5060, target: "primary.lab.test"))
            ])
        #expect(message.additionals == [DNSRecord(name: "primary.lab.test", ttl: 60, data: .a("198.19.255.1"))])
    }

    @Test func aCompressionPointerToItselfOrForwardIsRefusedNotFollowed() {
        // An answer whose owner name points at its own offset: a loop.
        var looping = Self.header(counts: [0, 1, 0, 0])
        looping += [0xc0, 12] + [0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        #expect(throws: DNSParseError.compressionLoop) { try DNSMessage(parsing: looping) }
        var forward = Self.header(counts: [0, 1, 0, 0])
        forward += [0xc0, 40] + [0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        #expect(throws: DNSParseError.compressionLoop) { try DNSMessage(parsing: forward) }
    }

    @Test func aMessageShorterThanItsCountsOrWithTooManyRecordsIsRefused() {
        #expect(throws: DNSParseError.truncatedMessage) { try DNSMessage(parsing: Self.header(counts: [0, 2, 0, 0])) }
        #expect(throws: DNSParseError.tooManyRecords) {
            try DNSMessage(parsing: Self.header(counts: [0, 60000, 0, 0]))
        }
        #expect(throws: DNSParseError.truncatedMessage) { try DNSMessage(parsing: [0x12]) }
        // An RDLENGTH past the end of the message.
        var overrun = Self.header(counts: [0, 1, 0, 0])
        overrun += [0] + [0, 1, 0, 1, 0, 0, 0, 1, 0, 200, 1, 2, 3, 4]
        #expect(throws: DNSParseError.truncatedMessage) { try DNSMessage(parsing: overrun) }
    }

    @Test func aNAPTRRecordKeepsItsServiceAndReplacement() throws {
        var bytes = Self.header(counts: [0, 1, 0, 0])
        let rdata =
            Self.u16(10) + Self.u16(20) + [1] + Array("S".utf8) + [7] + Array("SIP+D2T".utf8) + [0]
            + Self.name("_sip._tcp.lab.test")
        bytes += Self.name("lab.test") + [0, 35, 0, 1, 0, 0, 0, 30] + Self.u16(rdata.count) + rdata
        let message = try DNSMessage(parsing: bytes)
        #expect(
            message.answers.first?.data
                == .naptr(
                    order: 10, preference: 20, flags: "s", service: "sip+d2t", regexp: "",
                    replacement: "_sip._tcp.lab.test"))
    }

    @Test func anIPv6AddressIsWrittenAsRFC5952Says() {
        let octets: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        #expect(DNSReader.ipv6Text(octets) == "2001:db8::1")
        #expect(DNSReader.ipv6Text([UInt8](repeating: 0, count: 16)) == "::")
    }

    @Test func resolvConfGivesServersAndBoundedOptions() {
        let conf = ResolverConfiguration(
            resolvConf: "# comment\nnameserver 198.19.255.53\nnameserver 2001:db8::53\noptions timeout:99 attempts:0\n"
                + "nameserver 198.18.0.1\nnameserver 198.18.0.2\n")
        #expect(conf.servers.map(\.host) == ["198.19.255.53", "2001:db8::53", "198.18.0.1"])
        #expect(conf.timeout == .seconds(30) && conf.attempts == 1)
        #expect(ResolverConfiguration(resolvConf: "").servers.map(\.host) == ["127.0.0.1"])
    }
}
