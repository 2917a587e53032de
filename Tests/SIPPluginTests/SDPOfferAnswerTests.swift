import Testing

@testable import SIPPlugin

/// RFC 3264 offer/answer descriptions: o= versions, hold (§8.4), answering directions. Which offer
/// is outstanding (glare) is the call machine's (``CallMachineTests``).
struct SDPOfferAnswerTests {
    static let audio = [SessionDescription.Media(port: 4_000, formats: ["0", "8"])]
    typealias Direction = SessionDescription.Direction

    /// A far-end description with `direction`, as it would answer or offer.
    static func far(_ direction: Direction, version: UInt64 = 1, port: Int = 5_000) -> SessionDescription {
        SessionDescription(
            origin: .init(sessionID: 77, version: version, connection: .init(address: "198.18.0.9")),
            connection: .init(address: "198.18.0.9"),
            media: [.init(port: port, formats: ["0"], direction: direction)])
    }

    /// A session that offered and got `sendrecv` back: established.
    static func established() throws -> SDPOfferAnswer {
        var session = SDPOfferAnswer(sessionID: 1_000)
        let offer = session.offer(address: "198.18.0.1", media: audio, hold: false)
        _ = try session.received(answer: far(.sendrecv), to: offer)
        return session
    }

    @Test func theFirstOfferIsSendrecvAndTheAnswerNegotiatesTheFarAddress() throws {
        var session = SDPOfferAnswer(sessionID: 1_000)
        let offer = session.offer(address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(offer.direction(ofMedia: 0) == .sendrecv)
        #expect(offer.connection(ofMedia: 0)?.address == "198.18.0.1")
        let negotiated = try #require(try session.received(answer: Self.far(.sendrecv), to: offer))
        #expect(negotiated.remoteAddress == "198.18.0.9" && negotiated.remotePort == 5_000)
        #expect(negotiated.direction == .sendrecv && negotiated.payloadType == "0")
    }

    @Test func holdIsSendonlyWithTheRealAddressAndANewVersion() throws {
        var session = try Self.established()
        let first = try #require(session.lastSent)
        let hold = session.offer(address: "198.18.0.1", media: Self.audio, hold: true)
        #expect(hold.direction(ofMedia: 0) == .sendonly)
        #expect(hold.connection?.address == "198.18.0.1", "never c=0.0.0.0")
        #expect(hold.origin.version == first.origin.version + 1 && hold.origin.sessionID == first.origin.sessionID)
        // The far end answers recvonly (§8.4): we send music on hold, receive nothing.
        let negotiated = try session.received(answer: Self.far(.recvonly, version: 2), to: hold)
        #expect(negotiated?.direction == .sendonly)
        #expect(!session.remoteHoldsUs, "their recvonly answers our hold; they do not hold us")
        let resume = session.offer(address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(resume.direction(ofMedia: 0) == .sendrecv && resume.origin.version == first.origin.version + 2)
    }

    @Test func holdingWhenTheFarEndAlreadyHoldsUsIsInactive() throws {
        var session = try Self.established()
        try session.check(offer: Self.far(.sendonly, version: 2), localAddress: "198.18.0.1")
        let (answer, negotiated) = session.answer(
            Self.far(.sendonly, version: 2), address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(answer.direction(ofMedia: 0) == .recvonly, "a held offer is not answered with hold")
        #expect(negotiated?.direction == .recvonly && session.remoteHoldsUs)
        let hold = session.offer(address: "198.18.0.1", media: Self.audio, hold: true)
        #expect(hold.direction(ofMedia: 0) == .inactive)
        _ = try session.received(answer: Self.far(.inactive, version: 3), to: hold)
        let unhold = session.offer(address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(unhold.direction(ofMedia: 0) == .recvonly, "we never resume the far end's own hold")
    }

    @Test(arguments: [
        (Direction.sendrecv, false, Direction.sendrecv), (.sendonly, false, .recvonly), (.recvonly, false, .sendonly),
        (.inactive, false, .inactive), (.sendrecv, true, .sendonly), (.sendonly, true, .inactive),
        (.recvonly, true, .sendonly), (.inactive, true, .inactive),
    ])
    func anAnswerReversesTheOfferLimitedByOurHold(offered: Direction, hold: Bool, answered: Direction) throws {
        var session = SDPOfferAnswer(sessionID: 5)
        try session.check(offer: Self.far(offered), localAddress: "198.18.0.1")
        let (answer, _) = session.answer(Self.far(offered), address: "198.18.0.1", media: Self.audio, hold: hold)
        #expect(answer.direction(ofMedia: 0) == answered)
    }

    @Test func everyNewOfferRaisesTheVersionByOneEvenWithUnchangedMedia() throws {
        // RFC 3264 §8: "the version in the origin field MUST increment by one from the previous
        // SDP". A recovery re-offers the same media: a far end that ignores an unchanged version
        // would never re-latch its media to the restored path.
        var session = try Self.established()
        let version = try #require(session.lastSent?.origin.version)
        let same = session.offer(address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(same.origin.version == version + 1)
        _ = try session.received(answer: Self.far(.sendrecv, version: 2), to: same)
        var other = Self.audio
        other[0].port = 4_002
        let moved = session.offer(address: "198.18.0.1", media: other, hold: false)
        #expect(moved.origin.version == version + 2)
        #expect(moved.origin.sessionID == same.origin.sessionID && moved.origin.username == same.origin.username)
    }

    @Test func anUnchangedAnswerKeepsTheVersion() throws {
        var session = try Self.established()
        let version = try #require(session.lastSent?.origin.version)
        try session.check(offer: Self.far(.sendrecv, version: 2))
        let (again, _) = session.answer(
            Self.far(.sendrecv, version: 2), address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(again.origin.version == version, "an answer that says nothing new keeps its version (§8)")
    }

    @Test func anIPv4ToIPv6MoveKeepsTheSessionWithANewVersion() throws {
        var session = try Self.established()
        let before = try #require(session.lastSent)
        let moved = session.offer(address: "2001:db8::1", media: Self.audio, hold: false)
        #expect(moved.connection == .init(family: .ipv6, address: "2001:db8::1"))
        #expect(moved.origin.sessionID == before.origin.sessionID && moved.origin.version == before.origin.version + 1)
        #expect(moved.origin.connection == before.origin.connection, "o= stays as first sent (RFC 3264 §8)")
        #expect(try SessionDescription.parse(moved.serialized()) == moved, "what we write parses back")
        var following = try Self.established()
        following.originFollowsAddress = true
        let follows = following.offer(address: "2001:db8::1", media: Self.audio, hold: false)
        #expect(follows.origin.connection.family == .ipv6 && follows.origin.sessionID == before.origin.sessionID)
    }

    @Test func aRejectedOfferLeavesTheOldSessionButTheVersionNeverGoesBack() throws {
        var session = try Self.established()
        let held = session.offer(address: "198.18.0.1", media: Self.audio, hold: true)
        // 488 or 491 to the re-INVITE (RFC 6141: the old session stays): no answer is taken in.
        #expect(session.remote?.direction(ofMedia: 0) == .sendrecv)
        let again = session.offer(address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(again.origin.version == held.origin.version + 1, "higher than the withdrawn offer, too")
    }

    @Test func anAnswerWithTheWrongStreamCountIsRefusedAndChangesNothing() throws {
        var session = SDPOfferAnswer(sessionID: 1)
        let offer = session.offer(address: "198.18.0.1", media: Self.audio + Self.audio, hold: false)
        #expect(throws: OfferAnswerError.streamCountMismatch(offered: 2, answered: 1)) {
            _ = try session.received(answer: Self.far(.sendrecv), to: offer)
        }
        #expect(session.remote == nil)
    }

    @Test func anOutdatedRemoteOfferIsRefused() throws {
        var session = SDPOfferAnswer(sessionID: 1)
        try session.check(offer: Self.far(.sendrecv, version: 5), localAddress: "198.18.0.1")
        _ = session.answer(Self.far(.sendrecv, version: 5), address: "198.18.0.1", media: Self.audio, hold: false)
        #expect(throws: OfferAnswerError.outdatedOffer) {
            try session.check(offer: Self.far(.sendrecv, version: 4), localAddress: "198.18.0.1")
        }
    }
}
