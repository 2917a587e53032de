import ResilienceCore
import Testing

@testable import SIPPlugin

/// The STUN Binding codec of the UDP keep-alive (RFC 5389, RFC 5626 §4.4.1): the RFC 5769 test
/// vector, the request's fixed shape, and hostile bytes that must give nil, never a trap.
struct STUNMessageTests {
    /// RFC 5769 §2.2, "Sample IPv4 Response": XOR-MAPPED-ADDRESS 192.0.2.1 port 32853.
    static let rfc5769Response: [UInt8] = [
        0x01, 0x01, 0x00, 0x3c, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86,
        0xfa, 0x87, 0xdf, 0xae, 0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63,
        0x74, 0x6f, 0x72, 0x20, 0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43,
        0x00, 0x08, 0x00, 0x14, 0x2b, 0x91, 0xf5, 0x99, 0xfd, 0x9e, 0x90, 0xc3, 0x8c, 0x74, 0x89, 0xf9,
        0x2a, 0xf9, 0xba, 0x53, 0xf0, 0x6b, 0xe7, 0xd7, 0x00, 0x28, 0x00, 0x04, 0xc0, 0x7d, 0x4c, 0x96,
    ]

    @Test func theRFC5769SampleResponseNamesItsMappedAddressAndTransaction() throws {
        let answer = try #require(STUNMessage.parseBindingAnswer(Self.rfc5769Response))
        #expect(answer.mapped == "192.0.2.1:32853")
        #expect(answer.transactionID == [0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae])
    }

    /// RFC 5389 §15.5: "The value of the attribute is computed as the CRC-32 of the STUN message
    /// up to (but excluding) the FINGERPRINT attribute itself, XOR'ed with the 32-bit value 0x5354554e".
    @Test func aBindingRequestIsAHeaderAndAFingerprintOverIt() {
        let id: [UInt8] = Array(1...12)
        let request = STUNMessage.bindingRequest(transactionID: id)
        #expect(request.count == 28)
        #expect(Array(request[0..<4]) == [0x00, 0x01, 0x00, 0x08])
        #expect(Array(request[4..<8]) == [0x21, 0x12, 0xa4, 0x42])
        #expect(Array(request[8..<20]) == id)
        let crc = STUNMessage.crc32(Array(request[0..<20])) ^ 0x5354_554E
        #expect(Array(request[20..<28]) == [0x80, 0x28, 0x00, 0x04] + [24, 16, 8, 0].map { UInt8(crc >> $0 & 0xFF) })
        #expect(STUNMessage.looksLikeSTUN(request))
        #expect(STUNMessage.crc32(Array("123456789".utf8)) == 0xCBF4_3926, "the CRC-32 check value")
    }

    @Test func sipTextAndCRLFKeepAlivesAreNeverTakenForSTUN() {
        let sip = Array("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 198.18.1.2:5060\r\nContent-Length: 0\r\n\r\n".utf8)
        #expect(!STUNMessage.looksLikeSTUN(sip))
        #expect(!STUNMessage.looksLikeSTUN(Array("\r\n\r\n".utf8)))
        #expect(!STUNMessage.looksLikeSTUN([]))
    }

    /// Truncations, a length past the end, an attribute longer than the message, and 5,000 seeded
    /// byte mutations of the sample: each gives nil or an answer, and an address is always sane.
    @Test func hostileBytesGiveNilOrASaneAnswerAndNeverTrap() {
        let sample = Self.rfc5769Response
        for cut in 0..<sample.count { _ = STUNMessage.parseBindingAnswer(Array(sample[0..<cut])) }
        var longAttribute = sample
        longAttribute[38] = 0xFF  // XOR-MAPPED-ADDRESS claims 0xFF08 bytes
        #expect(STUNMessage.parseBindingAnswer(longAttribute) == nil)
        var generator = SplitMix64(seed: 22)
        for _ in 0..<5000 {
            var bytes = sample
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            if let mapped = STUNMessage.parseBindingAnswer(bytes)?.mapped {
                let port = mapped.split(separator: ":").last.flatMap { Int($0) } ?? 0
                #expect((1...65_535).contains(port), "\(mapped)")
            }
        }
    }
}
