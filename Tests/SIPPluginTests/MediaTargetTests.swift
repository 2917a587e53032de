import Testing

@testable import SIPPlugin

/// Where a far end may ask for media (issue 25): the pure check, and the offer it makes the
/// call refuse with 488 (RFC 3264 §6: "the answerer MAY reject the offer").
struct MediaTargetTests {
    @Test(
        arguments: [
            ("198.18.0.9", 40_000, nil),
            ("2001:db8::9", 40_000, nil),
            ("127.0.0.1", 40_000, "loopback"),
            ("::1", 40_000, "loopback"),
            ("::ffff:127.0.0.1", 40_000, "loopback"),
            ("0.0.0.0", 40_000, "unspecified"),
            ("::", 40_000, "unspecified"),
            ("255.255.255.255", 40_000, "broadcast"),
            ("224.0.0.1", 40_000, "multicast"),
            ("ff02::1", 40_000, "multicast"),
            ("198.18.0.9", 53, "not an RTP port"),
            ("sip.example.test", 40_000, "not an IP address"),
        ] as [(String, Int, String?)])
    func aFarEndsTargetIsRefusedWhenItIsThisHostABroadcastAGroupOrAService(
        address: String, port: Int, why: String?
    ) {
        let problem = MediaTarget.problem(address: address, port: port, localAddress: "198.18.0.1")
        if let why {
            #expect(problem?.contains(why) == true, "\(address):\(port): \(problem ?? "accepted")")
        } else {
            #expect(problem == nil, "\(address):\(port): \(problem ?? "")")
        }
    }

    @Test func loopbackIsAcceptedOnlyWhenOurOwnAddressIsLoopbackAndPortZeroIsADeclinedStream() {
        #expect(MediaTarget.problem(address: "127.0.0.1", port: 40_000, localAddress: "127.0.0.1") == nil)
        #expect(MediaTarget.problem(address: "::1", port: 40_000, localAddress: "::1") == nil)
        #expect(MediaTarget.problem(address: "127.0.0.1", port: 40_000, localAddress: nil) != nil)
        #expect(MediaTarget.problem(address: "224.0.0.1", port: 0, localAddress: "198.18.0.1") == nil)
    }

    @Test func anOfferForMulticastMediaIsRefusedAndTheSessionInForceStays() throws {
        let session = try SDPOfferAnswerTests.established()
        let before = session.remote
        var hostile = SDPOfferAnswerTests.far(.sendrecv, version: 2)
        hostile.connection = .init(address: "224.0.0.1")
        #expect(throws: OfferAnswerError.unusableMediaTarget("stream 1: 224.0.0.1 is multicast")) {
            try session.check(offer: hostile, localAddress: "198.18.0.1")
        }
        #expect(session.remote == before)
        try session.check(offer: SDPOfferAnswerTests.far(.sendrecv, version: 2), localAddress: "198.18.0.1")
    }
}
