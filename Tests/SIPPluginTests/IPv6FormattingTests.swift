import Foundation
import NIOCore
import Testing

@testable import SIPPlugin

/// IPv6 as SIP and SDP write it: brackets in SIP's host grammar, none in SDP's, and the `o=`
/// line of a session that changes family.
struct IPv6FormattingTests {
    static let here = "2001:db8:1::2"
    static let audio = [SessionDescription.Media(port: 4_000, formats: ["0"])]

    /// RFC 3261 §25.1: `host = hostname / IPv4address / IPv6reference` and
    /// `IPv6reference = "[" IPv6address "]"`: a Via sent-by and a Contact carry the address in
    /// brackets, and what we write parses back to the address and port.
    @Test func viaAndContactBracketAnIPv6AddressAndParseItBack() throws {
        #expect(formatHost(Self.here) == "[2001:db8:1::2]")
        #expect(formatHost("[2001:db8:1::2]") == "[2001:db8:1::2]", "never bracketed twice")
        #expect(formatHost("198.18.1.2") == "198.18.1.2")
        let via = "SIP/2.0/UDP \(formatHost(Self.here)):5062;branch=z9hG4bK-1;rport"
        let sentBy = try #require(ReceivedVia.sentBy(of: via))
        #expect(sentBy.host == Self.here && sentBy.port == 5062)
        #expect(SIPGrammar.hostProblem(formatHost(Self.here)) == nil, "a Contact's host: an IPv6reference")
        #expect(ReceivedVia.sentBy(of: "SIP/2.0/UDP [2001:db8:1::2:5062;branch=z9hG4bK-1") == nil, "unclosed")
    }

    /// RFC 3261 §25.1: `via-received = "received" EQUAL (IPv4address / IPv6address)`: an IPv6
    /// source is stamped bare, and a response goes back to that source, at `rport` (RFC 3581 §4).
    @Test func anIPv6SourceIsStampedAsReceivedWithoutBracketsAndAnsweredThere() throws {
        var request = SIPMessage.request("OPTIONS", uri: "sip:alice@[2001:db8:1::2]:5080")
        request.headers.add("Via", "SIP/2.0/UDP [2001:db8:1::9]:5062;rport;branch=z9hG4bK-6")
        request.headers.add("Call-ID", "v6")
        let stamped = try #require(ReceivedVia.stamped(request, sourceHost: "2001:db8:7::7", sourcePort: 41_000))
        let via = try #require(stamped.headers["Via"])
        #expect(via.contains(";received=2001:db8:7::7") && via.contains(";rport=41000"), "\(via)")
        let target = ReceivedVia.answerTarget(
            of: stamped, source: try SocketAddress(ipAddress: "2001:db8:7::7", port: 41_000))
        #expect(target.ipAddress == "2001:db8:7::7" && target.port == 41_000)
    }

    /// RFC 4566 §5.7: `c=<nettype> <addrtype> <connection-address>` with `IP6` for IPv6, and its
    /// grammar's `IP6-address = hexpart [ ":" IP4-address ]`: no brackets in SDP. A `c=` whose
    /// address is not of its type is refused.
    @Test func sdpWritesIP6WithoutBracketsAndRefusesAMismatchedAddressType() throws {
        var session = SDPOfferAnswer(sessionID: 4_242)
        let offer = session.offer(address: Self.here, media: Self.audio, hold: false)
        let text = offer.serialized()
        #expect(text.contains("\r\nc=IN IP6 2001:db8:1::2\r\n"), "\(text)")
        #expect(text.contains("\r\no=- 4242 \(offer.origin.version) IN IP6 2001:db8:1::2\r\n"), "\(text)")
        #expect(!text.contains("["), "\(text)")
        #expect(try SessionDescription.parse(text) == offer)
        let bracketed = text.replacingOccurrences(of: "c=IN IP6 2001:db8:1::2", with: "c=IN IP6 [2001:db8:1::2]")
        #expect(throws: SDPError.self) { try SessionDescription.parse(bracketed) }
        let mismatched = text.replacingOccurrences(of: "c=IN IP6 ", with: "c=IN IP4 ")
        #expect(throws: SDPError.self) { try SessionDescription.parse(mismatched) }
    }

    /// A far end that moved from IPv4 to IPv6 re-offers with `o=` as first sent (RFC 3264 §8:
    /// "the "o=" line of the new SDP MUST be identical to that in the previous SDP, except that
    /// the version in the origin field MUST increment by one") and `c=IN IP6`: we take it, and
    /// media goes to its IPv6 address. RFC 4566 §5.2 makes `o=`'s address "the address of the
    /// machine from which the session was created", so an `IP4` origin beside an `IP6`
    /// connection is no reason for a 488.
    @Test func aFarEndThatMovedToIPv6KeepsItsIPv4OriginAndIsAccepted() throws {
        var session = try SDPOfferAnswerTests.established()
        let origin = SessionDescription.Origin(sessionID: 77, version: 2, connection: .init(address: "198.18.0.9"))
        let moved = SessionDescription(
            origin: origin, connection: .init(address: "2001:db8:9::9"),
            media: [.init(port: 5_002, formats: ["0"], direction: .sendrecv)])
        let offered = try SessionDescription.parse(moved.serialized())
        try session.check(offer: offered, localAddress: Self.here)
        let (answer, negotiated) = session.answer(offered, address: Self.here, media: Self.audio, hold: false)
        #expect(negotiated?.remoteAddress == "2001:db8:9::9" && negotiated?.remotePort == 5_002)
        #expect(answer.connection == .init(family: .ipv6, address: Self.here))
        #expect(answer.origin.connection.family == .ipv4, "our o= stays as first sent: \(answer.serialized())")
    }
}
