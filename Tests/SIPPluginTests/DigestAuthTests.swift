import Testing

@testable import SIPPlugin

struct DigestAuthTests {
    @Test func rfc2617ExampleResponse() {
        let challenge = DigestChallenge(realm: "testrealm@host.com", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093")
        let credentials = DigestCredentials(username: "Mufasa", password: "Circle Of Life")
        let response = credentials.response(
            to: challenge, method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: "0a4f113b")
        #expect(response == "6629fae49393a05397450978507c4ef1")
    }

    @Test(arguments: [
        (DigestChallenge.Algorithm.sha256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        (.md5, "8ca523f5e9506fed4657c9700eebdbec"),
    ])
    func rfc7616ExampleResponses(algorithm: DigestChallenge.Algorithm, expected: String) {
        let challenge = DigestChallenge(
            realm: "http-auth@example.org", nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", algorithm: algorithm)
        let credentials = DigestCredentials(username: "Mufasa", password: "Circle of Life")
        let response = credentials.response(
            to: challenge, method: "GET", uri: "/dir/index.html", nonceCount: 1,
            cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ")
        #expect(response == expected)
    }

    @Test func challengeParsingPrefersSHA256AndReadsStale() throws {
        let headers = [
            "Digest realm=\"example.org\", nonce=\"abc\", qop=\"auth,auth-int\", algorithm=MD5",
            "Digest realm=\"example.org\", nonce=\"def\", qop=\"auth\", algorithm=SHA-256, stale=TRUE, opaque=\"o\"",
        ]
        let best = try #require(DigestChallenge.best(of: headers))
        #expect(best.algorithm == .sha256)
        #expect(best.nonce == "def")
        #expect(best.stale)
        #expect(best.opaque == "o")
        #expect(best.qopAuth)
    }

    @Test func unusableChallengesAreIgnored() {
        #expect(DigestChallenge(header: "Basic realm=\"x\"") == nil)
        #expect(DigestChallenge(header: "Digest realm=\"x\", nonce=\"n\", algorithm=MD5-sess") == nil)
        #expect(DigestChallenge(header: "Digest nonce=\"n\"") == nil)
        #expect(DigestChallenge(header: "Digest realm=\"x\", nonce=\"n\", qop=\"auth-int\"") == nil)
    }

    @Test func authorizationHeaderCarriesNonceCountAndOpaque() {
        let challenge = DigestChallenge(realm: "r", nonce: "n", opaque: "o")
        let value = DigestCredentials(username: "u", password: "p")
            .authorization(for: challenge, method: "REGISTER", uri: "sip:r", nonceCount: 26, cnonce: "c")
        #expect(value.contains("nc=0000001a"))
        #expect(value.contains("opaque=\"o\""))
        #expect(value.contains("qop=auth"))
        #expect(value.hasPrefix("Digest username=\"u\""))
    }
}
