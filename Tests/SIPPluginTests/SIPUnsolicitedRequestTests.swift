import Testing

@testable import SIPPlugin

/// What the agent answers to requests it did not ask for (RFC 3261 §8.2.1, §9.2, §15.1.2).
struct SIPUnsolicitedRequestTests {
    static func request(_ method: String) -> SIPMessage { peerRequest(method) }

    @Test(arguments: [
        ("OPTIONS", 200), ("INVITE", 405), ("MESSAGE", 405), ("REFER", 405), ("CANCEL", 481), ("BYE", 481),
        ("FROBNICATE", 501),
    ])
    func eachMethodGetsTheAnswerItsRoleCalls(method: String, status: Int) throws {
        let answer = try #require(SIPUserAgent.immediateAnswer(to: Self.request(method)))
        #expect(answer.status == status)
        #expect(answer.headers["Call-ID"] == "unsolicited-1")
        #expect(answer.cseq?.method == method)
        // 200 to OPTIONS and 405 say what this agent does accept.
        if status == 200 || status == 405 {
            #expect(answer.headers["Allow"] == "INVITE, ACK, CANCEL, BYE, UPDATE, NOTIFY, OPTIONS, MESSAGE")
        }
    }

    @Test func anACKIsNeverAnswered() {
        #expect(SIPUserAgent.immediateAnswer(to: Self.request("ACK")) == nil)
    }
}
