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

    /// Through the plugin from a real peer: what the runtime is handed is the clamp, whatever
    /// the registrar wrote, and a lifetime beyond a day is granted as a day.
    @Test(arguments: [
        (503, "Retry-After", "9223372036854775807", 86_400), (503, "Retry-After", "-1", nil),
        (503, "Retry-After", "0", 0), (200, "Expires", "99999999999999999999", 86_400),
    ])
    func aPeersHugeNumbersReachTheRuntimeClamped(status: Int, name: String, value: String, seconds: Int?)
        async throws
    {
        let peer = try UDPTestPeer()
        let account = SIPAccount(
            name: "clamp", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "clamp",
            domain: "127.0.0.1", password: "pw", flowPing: .off)
        let plugin = SIPPlugin(accounts: [account], logger: testLogger("clamp"))
        let script = Task {
            await peer.run { peer -> Bool in
                guard
                    let (request, from) = SIPSubscriptionPeerTests.nextRequest(
                        peer, within: UDPTestPeer.arrivalGuard)
                else { return false }
                var response = request.makeResponse(status: status, reason: "Busy", toTag: "r")
                response.headers.add(name, value)
                peer.send(response.serialized(), to: from)
                return true
            }
        }
        let register = action(.register, account.registrationService)
        do {
            try await plugin.perform(register, context: context())
            let granted = await plugin.agent(for: "clamp")?.registrationStatus.expires
            #expect(granted == seconds)
        } catch let error as PluginError {
            #expect(status == 503)
            #expect(error.retryAfter == seconds.map { .seconds($0) })
        }
        #expect(await script.value)
        await plugin.agent(for: "clamp")?.close()
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
