import Testing

@testable import SIPPlugin

/// SDP (RFC 8866) as a VoIP client needs it: parse, write, and refuse hostile input clearly.
struct SessionDescriptionTests {
    static let offer = """
        v=0\r
        o=alice 2890844526 2890844527 IN IP4 198.18.0.1\r
        s=call\r
        c=IN IP4 198.18.0.1\r
        b=AS:64\r
        t=0 0\r
        m=audio 49170 RTP/AVP 0 8 101\r
        a=rtpmap:0 PCMU/8000\r
        a=rtpmap:101 telephone-event/8000\r
        a=fmtp:101 0-15\r
        a=rtcp-mux\r
        a=sendonly\r

        """

    /// Found by FuzzSDP: `s=` parsed as an empty name, which serialization writes as `s=-`, so the
    /// description changed on its way back out.
    @Test func anEmptySessionNameSurvivesSerialization() throws {
        let sdp = try SessionDescription.parse(Self.offer.replacing("s=call", with: "s="))
        #expect(try SessionDescription.parse(sdp.serialized()) == sdp)
    }

    @Test func aTypicalOfferParsesIntoItsFields() throws {
        let sdp = try SessionDescription.parse(Self.offer)
        #expect(sdp.origin.sessionID == 2_890_844_526 && sdp.origin.version == 2_890_844_527)
        #expect(sdp.origin.connection == .init(family: .ipv4, address: "198.18.0.1"))
        #expect(sdp.connection?.address == "198.18.0.1")
        #expect(sdp.media.count == 1)
        let audio = sdp.media[0]
        #expect(audio.port == 49_170 && audio.formats == ["0", "8", "101"])
        #expect(
            audio.rtpMaps == [
                .init(payloadType: 0, encoding: "PCMU", clockRate: 8_000),
                .init(payloadType: 101, encoding: "telephone-event", clockRate: 8_000),
            ])
        #expect(audio.rtcpMux && audio.direction == .sendonly)
        #expect(sdp.direction(ofMedia: 0) == .sendonly)
    }

    @Test func writingAndParsingAgainGivesTheSameValue() throws {
        let sdp = try SessionDescription.parse(Self.offer)
        let again = try SessionDescription.parse(sdp.serialized())
        #expect(again == sdp)
        #expect(sdp.serialized().hasPrefix("v=0\r\no=alice 2890844526 2890844527 IN IP4 198.18.0.1\r\ns=call\r\n"))
    }

    @Test func ipv6AndBareLineFeedsAndAMediaLevelConnectionParse() throws {
        let text = "v=0\no=- 1 1 IN IP6 2001:db8::1\ns=-\nt=0 0\nm=audio 4000 RTP/AVP 0\nc=IN IP6 2001:db8::2\n"
        let sdp = try SessionDescription.parse(text)
        #expect(sdp.connection == nil)
        #expect(sdp.connection(ofMedia: 0) == .init(family: .ipv6, address: "2001:db8::2"))
        #expect(sdp.direction(ofMedia: 0) == .sendrecv, "no attribute means sendrecv")
    }

    @Test(arguments: [
        ("", "v"),
        ("v=1\n", "v"),
        ("v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nt=0 0\nm=audio 70000 RTP/AVP 0\nc=IN IP4 198.18.0.1\n", "m"),
        ("v=0\no=- 99999999999999999999 1 IN IP4 198.18.0.1\ns=-\nt=0 0\n", "o"),
        ("v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nt=0 0\nm=audio 4000 RTP/AVP 0\n", "c"),
        ("v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nt=0 0\nc=IN IP6 198.18.0.1\n", "c"),
        (
            "v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nt=0 0\nc=IN IP4 198.18.0.3\r\nm=audio 4000 RTP/AVP 0\na=rtpmap:300 X/8000\n",
            "a=rtpmap"
        ),
        ("v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nt=zero\n", "t"),
        ("v=0\nhello\n", "line"),
    ])
    func hostileOrBrokenInputIsRefusedNamingTheField(text: String, field: String) {
        #expect {
            _ = try SessionDescription.parse(text)
        } throws: { error in
            (error as? SDPError)?.field == field
        }
    }

    @Test func anErrorNamesTheLineAndEscapesWhatItQuotes() throws {
        let text = "v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nt=0 0\nc=IN IP4 bad\u{1B}[31maddr\n"
        let error = try #require(throws: SDPError.self) { try SessionDescription.parse(text) }
        #expect(error.line == 5 && error.field == "c")
        #expect(!error.description.contains("\u{1B}"), "a terminal escape from the wire never reaches a log")
    }

    @Test func limitsOnSizeLinesMediaAndFormatsHold() {
        let head = "v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\nc=IN IP4 198.18.0.1\nt=0 0\n"
        let big = head + String(repeating: "a=x\n", count: 5_000)
        #expect(throws: SDPError.self) { try SessionDescription.parse(big) }
        let manyLines = head + String(repeating: "a=\n", count: SessionDescription.maximumLineCount)
        #expect(throws: SDPError.self) { try SessionDescription.parse(manyLines) }
        let manyMedia =
            head + String(repeating: "m=audio 4000 RTP/AVP 0\n", count: SessionDescription.maximumMediaCount + 1)
        #expect(throws: SDPError.self) { try SessionDescription.parse(manyMedia) }
        let formats = (0...SessionDescription.maximumFormatCount).map(String.init).joined(separator: " ")
        #expect(throws: SDPError.self) { try SessionDescription.parse(head + "m=audio 4000 RTP/AVP \(formats)\n") }
        #expect(throws: SDPError.self) { try SessionDescription.parse([0xFF, 0xFE] + Array(head.utf8)) }
    }

    @Test func unknownLinesAndAttributesAreSkipped() throws {
        let text =
            "v=0\no=- 1 1 IN IP4 198.18.0.1\ns=-\ni=info\nc=IN IP4 198.18.0.1\nt=0 0\nz=0\n"
            + "m=audio 4000 RTP/AVP 0\na=ptime:20\na=ssrc:1 cname:x\n"
        let sdp = try SessionDescription.parse(text)
        #expect(sdp.media.count == 1 && sdp.media[0].direction == nil && sdp.media[0].rtpMaps.isEmpty)
    }

    /// 3,000 mutations of a valid offer (bytes flipped, cut, repeated): each parses or throws an
    /// SDPError, never traps, and what parses writes back to text that parses to the same value.
    @Test func mutatedOffersParseOrFailCleanly() throws {
        var generator = SystemRandomNumberGenerator()
        let original = Array(Self.offer.utf8)
        var parsed = 0
        for round in 0..<3_000 {
            var bytes = original
            switch round % 3 {
            case 0:
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            default:
                let line = Int.random(in: 0..<bytes.count, using: &generator)
                bytes.insert(contentsOf: bytes[line...].prefix(40), at: line)
            }
            guard let sdp = try? SessionDescription.parse(bytes) else { continue }
            parsed += 1
            #expect(try SessionDescription.parse(sdp.serialized()) == sdp)
        }
        #expect(parsed > 0 && parsed < 3_000, "some mutations parse, some are refused")
    }
}
