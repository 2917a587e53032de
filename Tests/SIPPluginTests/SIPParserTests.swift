import NIOCore
import Testing

@testable import SIPPlugin

struct SIPParserTests {
    static let register = """
        REGISTER sip:example.org SIP/2.0\r
        v: SIP/2.0/UDP 198.18.0.2:5060;branch=z9hG4bKabc;rport\r
        Via: SIP/2.0/UDP 198.18.0.9;branch=z9hG4bKdef, SIP/2.0/TCP 198.18.0.10;branch=z9hG4bKghi\r
        f: "Alice, the \\"first\\"" <sip:alice@example.org>;tag=1\r
        t: <sip:alice@example.org>\r
        i: call-1\r
        CSeq: 7 register\r
        m: <sip:alice@198.18.0.2:5060;transport=udp>;expires=600, "Desk, left" <sip:alice@198.18.0.3>\r
        Subject: first line\r
         continued\r
        \tand more\r
        l: 4\r
        \r
        body
        """

    @Test func compactAndCaseInsensitiveHeaderNamesResolveToLongForms() throws {
        let message = try SIPParser.parse(datagram: Array(Self.register.utf8))
        #expect(message.method == "REGISTER")
        #expect(message.headers["call-id"] == "call-1")
        #expect(message.headers["CALL-ID"] == "call-1")
        #expect(message.headers["From"]?.hasPrefix("\"Alice") == true)
        #expect(message.cseq?.number == 7)
        #expect(message.cseq?.method == "REGISTER")
        #expect(message.topViaBranch == "z9hG4bKabc")
        #expect(message.body == Array("body".utf8))
    }

    @Test func foldedLinesAreJoinedWithOneSpace() throws {
        let message = try SIPParser.parse(datagram: Array(Self.register.utf8))
        #expect(message.headers["Subject"] == "first line continued and more")
    }

    @Test func listHeadersSplitOutsideQuotesAndAngleBrackets() throws {
        let message = try SIPParser.parse(datagram: Array(Self.register.utf8))
        #expect(message.headers.listValues("Via").count == 3)
        let contacts = message.headers.listValues("Contact")
        #expect(contacts.count == 2)
        #expect(contacts[1] == "\"Desk, left\" <sip:alice@198.18.0.3>")
        #expect(SIPParameters.parse(afterFirstSemicolon: contacts[0])["expires"] == "600")
        #expect(extractURI(contacts[0]) == "sip:alice@198.18.0.2:5060;transport=udp")
    }

    @Test func serializedMessageParsesBackToTheSameMessage() throws {
        let message = try SIPParser.parse(datagram: Array(Self.register.utf8))
        let again = try SIPParser.parse(datagram: message.serialized())
        var expected = message
        expected.headers.remove("Content-Length")
        expected.headers.add("Content-Length", "4")
        #expect(again == expected)
    }

    @Test func bareLineFeedsAreAccepted() throws {
        let text = "SIP/2.0 200 OK\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\nCSeq: 1 OPTIONS\nContent-Length: 0\n\n"
        let message = try SIPParser.parse(datagram: Array(text.utf8))
        #expect(message.status == 200)
        #expect(message.topViaBranch == "z9hG4bK1")
    }

    @Test(arguments: [
        ("", "truncated"),
        ("SIP/2.0 200 OK\r\nCSeq: 1 REGISTER\r\n", "truncated"),
        ("SIP/2.0 200 OK\r\nContent-Length: 10\r\n\r\nshort", "truncated body"),
        ("SIP/2.0 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
        ("SIP/2.0 200 OK\r\nContent-Length: 9999999999\r\n\r\n", "bad Content-Length"),
        ("SIP/2.0 200 OK\r\nl: 1\r\nContent-Length: 2\r\n\r\nab", "conflicting"),
        ("SIP/2.0 99 Low\r\n\r\n", "bad status code"),
        ("SIP/3.0 200 OK\r\n\r\n", "bad status line"),
        ("HELLO\r\n\r\n", "bad request line"),
        ("REGISTER sip:x SIP/2.0\r\nNoColonHere\r\n\r\n", "without colon"),
        ("REGISTER sip:x SIP/2.0\r\n bad: fold\r\n\r\n", "continuation line"),
        ("REGISTER sip:x SIP/2.0\r\nBad Name: x\r\n\r\n", "bad header name"),
    ])
    func malformedInputIsRejectedWithAReason(text: String, reason: String) {
        #expect {
            try SIPParser.parse(datagram: Array(text.utf8))
        } throws: { error in
            (error as? SIPParseError)?.reason.contains(reason) == true
        }
    }

    @Test func invalidUTF8IsRejected() {
        let bytes = Array("SIP/2.0 200 OK\r\nX: ".utf8) + [0xff, 0xfe] + Array("\r\n\r\n".utf8)
        #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: bytes) }
    }

    @Test func randomBytesNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        let seeds = Array(Self.register.utf8)
        for round in 0..<2_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                // Mutate a valid message: flip, drop and truncate.
                bytes = seeds
                for _ in 0..<4 {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255)
                }
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            }
            _ = try? SIPParser.parse(datagram: bytes)
            var decoder = SIPFrameDecoder()
            var buffer = ByteBuffer(bytes: bytes)
            for _ in 0...bytes.count { guard (try? decoder.decode(buffer: &buffer)) != nil else { break } }
        }
    }
}
