import ResilienceCore
import Testing

@testable import SIPPlugin

/// Every number a peer sends is read into a documented range before any arithmetic (issue 13).
struct SIPWireNumberTests {
    static func response(_ status: Int, _ headers: [(String, String)]) -> SIPMessage {
        SIPMessage(startLine: .response(status: status, reason: "X"), headers: SIPHeaders(headers))
    }

    @Test(arguments: [
        ("9223372036854775807", 86_400), ("99999999999999999999999999999999", 86_400), ("2147483648", 86_400),
        ("86401", 86_400), ("3600", 3_600), ("0", 0), ("120 (in a meeting);duration=60", 120), (" 7", 7),
    ])
    func deltaSecondsAreClampedToOneDay(raw: String, seconds: Int) {
        #expect(SIPWireNumber.deltaSeconds(raw) == seconds)
    }

    @Test(arguments: ["-1", "-9223372036854775808", "", "abc", "12abc", "1e9", "0x10", "+5", "٣"])
    func malformedDeltaSecondsAreAbsentNotZero(raw: String) {
        #expect(SIPWireNumber.deltaSeconds(raw) == nil)
    }

    @Test func aHugeRetryAfterBecomesADayAndDoesNotTrapInDurationArithmetic() throws {
        let busy = Self.response(503, [("Retry-After", "9223372036854775807")])
        let wait = try #require(busy.retryAfter)
        #expect(wait == .seconds(86_400))
        // What the runtime does next with it: add jitter, compare, add to an instant.
        #expect(wait * 2 + .seconds(120) > wait)
        let error = SIPUserAgent.failure(busy, "REGISTER")
        #expect(error.retryAfter == .seconds(86_400))
    }

    @Test(arguments: [("Expires", "4294967296"), ("Min-Expires", "9223372036854775807"), ("Flow-Timer", "1e99")])
    func headerAccessorsStayInRange(name: String, raw: String) {
        let message = Self.response(200, [(name, raw)])
        for value in [message.expires, message.minExpires, message.flowTimer].compactMap(\.self) {
            #expect((0...SIPWireNumber.maximumLifetime).contains(value))
        }
    }

    @Test func aZeroOrNegativeFlowTimerMeansNone() {
        #expect(Self.response(200, [("Flow-Timer", "0")]).flowTimer == nil)
        #expect(Self.response(200, [("Flow-Timer", "-30")]).flowTimer == nil)
        #expect(Self.response(200, [("Flow-Timer", "25")]).flowTimer == 25)
    }

    @Test(arguments: [
        ("1 REGISTER", UInt32(1)), ("2147483647 REGISTER", UInt32(Int32.max)), ("2147483648 REGISTER", nil),
        ("4294967296 REGISTER", nil), ("-1 REGISTER", nil), ("+1 REGISTER", nil), ("x REGISTER", nil),
    ])
    func cseqNumbersAreBelowTwoToThe31(raw: String, number: UInt32?) {
        #expect(Self.response(200, [("CSeq", raw)]).cseq?.number == number)
    }

    @Test func subscriptionStateNumbersAreClamped() {
        let (_, expires, retryAfter) = SubscriptionStatus.State.parse(
            "terminated;reason=probation;expires=99999999999999999999;retry-after=-5")
        #expect(expires == 86_400)
        #expect(retryAfter == nil)
        #expect(SubscriptionStatus.State.parse("active;expires=0").expires == 0)
    }

    @Test(arguments: ["9223372036854775807", "70000", "-1", "abc"])
    func anOutOfRangeContentLengthRejectsTheMessage(raw: String) {
        let bytes = Array("SIP/2.0 200 OK\r\nCSeq: 1 REGISTER\r\nContent-Length: \(raw)\r\n\r\n".utf8)
        #expect(throws: SIPParseError.self) { try SIPParser.parse(datagram: bytes) }
    }
}
