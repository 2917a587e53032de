import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Our offers as one exchange across their attempts, INVITE and UPDATE alike, on a manual clock:
/// the glare retry and its wait (RFC 3261 §14.1, RFC 3311 §5), digest challenges, and the
/// responses that end a call (481, 408). The retry state lives in the machine; each request
/// completes exactly once.
struct CallMachineExchangeTests {
    /// Holds an established call (a re-INVITE) or recovers it with UPDATE when the far end
    /// allows it; the first attempt's 491 comes back. Returns the script, the exchange and the
    /// glare wait.
    func glared(method: String, ownsCallID: Bool, seed: UInt64) throws -> (CallScript, ExchangeID, Duration) {
        let allow = method == "UPDATE" ? ["INVITE", "UPDATE"] : ["INVITE"]
        var call: CallScript
        if ownsCallID {
            call = CallScript.established(seed: seed, allow: allow)
        } else {
            call = try CallScript.ringing(seed: seed)
            _ = call.handle(.peerAllows(allow))
            _ = call.handle(.answer)
            _ = call.handle(.mediaDescribed(.answer, .success(CallScript.audio), address: "198.18.0.1"))
        }
        let exchange = call.exchange()
        if method == "UPDATE" {
            _ = call.handle(.recover(exchange, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
        } else {
            _ = call.handle(.hold(.user, exchange, flow: CallScript.wifi))
        }
        #expect(CallScript.sentOffer(call.describe(exchange, attempt: 1))?.method == method)
        let glare = call.handle(.offerResponse(exchange, attempt: 1, .refused(status: 491)))
        guard case .note(.glare(let wait, method))? = glare.first else {
            Issue.record("no glare wait: \(glare)")
            return (call, exchange, .zero)
        }
        #expect(glare.last == .arm(.glareRetry, at: call.clock.now + wait))
        return (call, exchange, wait)
    }

    @Test(arguments: ["INVITE", "UPDATE"], [true, false])
    func aGlaredOfferIsRetriedOnceItsRandomWaitIsOver(method: String, ownsCallID: Bool) throws {
        // RFC 3261 §14.1: "If the UAC is the owner of the Call-ID of the dialog ID ..., T has a
        // randomly chosen value between 2.1 and 4 seconds in units of 10 ms. If the UAC is not the
        // owner of the Call-ID of the dialog ID, T has a randomly chosen value of between 0 and 2
        // seconds in units of 10 ms." RFC 3311 §5.1 gives UPDATE the same timer.
        var waits: Set<Duration> = []
        for seed in UInt64(1)...40 {
            var (call, exchange, wait) = try glared(method: method, ownsCallID: ownsCallID, seed: seed)
            let range =
                ownsCallID ? Duration.milliseconds(2_100)...Duration.seconds(4) : Duration.zero...Duration.seconds(2)
            #expect(range.contains(wait) && wait.components.attoseconds % 10_000_000_000_000_000 == 0, "\(wait)")
            waits.insert(wait)
            if wait > .zero {
                call.clock.advance(by: wait - .milliseconds(10))
                #expect(call.handle(.timerFired(.glareRetry)).isEmpty, "not before its time")
            }
            call.clock.advance(to: call.clock.now + .milliseconds(10))
            let retry = call.handle(.timerFired(.glareRetry))
            let held: SessionDescription.Direction = method == "INVITE" ? .sendonly : .sendrecv
            #expect(retry == [.describeMedia(.offer(exchange, attempt: 2), direction: held, answering: nil)])
            _ = call.describe(exchange, attempt: 2)
            let done = call.answered(exchange, attempt: 2, allow: ["INVITE", "UPDATE"])
            #expect(CallScript.completes(done, exchange, .succeeded))
            #expect(done.contains { if case .report(let report) = $0 { report.glareRetries == 1 } else { false } })
        }
        #expect(waits.count > 10, "the wait is drawn at random")
    }

    @Test(arguments: ["INVITE", "UPDATE"])
    func afterThreeGlareRetriesTheOldSessionIsKept(method: String) throws {
        var (call, exchange, _) = try glared(method: method, ownsCallID: true, seed: 7)
        for attempt in 2...4 {
            call.clock.advance(by: .seconds(4))
            _ = call.handle(.timerFired(.glareRetry))
            _ = call.describe(exchange, attempt: attempt)
            let response = call.handle(.offerResponse(exchange, attempt: attempt, .refused(status: 491)))
            if attempt < 4 { #expect(CallScript.armed(.glareRetry, in: response) != nil) }
            if attempt == 4 {
                let request = method == "UPDATE" ? "UPDATE" : "re-INVITE"
                #expect(CallScript.completes(response, exchange, .failed(.refused(status: 491, request: request))))
            }
        }
        #expect(
            call.machine.phase == .active && call.machine.holdReasons.isEmpty, "RFC 6141: the call goes on as it was")
    }

    @Test func anOfferGivenUpDuringItsGlareWaitEndsAtOnce() throws {
        var (call, exchange, _) = try glared(method: "INVITE", ownsCallID: true, seed: 3)
        let abandoned = call.handle(.abandon(exchange))
        #expect(abandoned == [.disarm(.glareRetry), .completed(exchange, .failed(.cancelled))])
        #expect(call.machine.offerSlotFree && call.machine.holdReasons.isEmpty)
    }

    @Test func aChallengeIsAnsweredTwiceAtMostWithANewOfferEachTime() {
        // RFC 3261 §22.2: the UAC "resubmits a request with its credentials after receiving a 401
        // (Unauthorized) or 407 (Proxy Authentication Required) response"; a third challenge
        // means the credentials are refused.
        var call = CallScript.placing()
        let placing = call.exchange()
        _ = call.handle(.place(placing, flow: CallScript.wifi))
        let first = CallScript.sentOffer(call.describe(placing, attempt: 1))
        for attempt in 1...2 {
            let challenged = call.handle(
                .offerResponse(placing, attempt: attempt, .challenged(status: 407, usable: true)))
            #expect(
                challenged == [
                    .authorize(placing),
                    .describeMedia(.offer(placing, attempt: attempt + 1), direction: .sendrecv, answering: nil),
                ])
            let again = CallScript.sentOffer(call.describe(placing, attempt: attempt + 1))
            #expect(again?.offer.origin.version == (first?.offer.origin.version ?? 0) + UInt64(attempt), "RFC 3264 §8")
        }
        let third = call.handle(.offerResponse(placing, attempt: 3, .challenged(status: 407, usable: true)))
        #expect(
            third == [
                .end(trigger: "remote", reason: "407", downtime: nil),
                .completed(placing, .failed(.refused(status: 407, request: "INVITE"))),
            ])
    }

    @Test func aChallengeWithoutAUsableDigestFailsThePlacing() {
        var (call, placing) = CallScript.inviting()
        let refused = call.handle(.offerResponse(placing, attempt: 1, .challenged(status: 401, usable: false)))
        #expect(CallScript.completes(refused, placing, .failed(.refused(status: 401, request: "INVITE"))))
        #expect(call.machine.phase == .ended)
    }

    @Test(arguments: [481, 408], ["INVITE", "UPDATE"])
    func a481Or408ToOurOfferEndsTheCallWithoutBye(status: Int, method: String) {
        // RFC 3261 §12.2.1.2: "If the response for a request within a dialog is a 481
        // (Call/Transaction Does Not Exist) or a 408 (Request Timeout), the UAC SHOULD terminate
        // the dialog." The far end no longer has it: no BYE goes.
        var call = CallScript.established(allow: method == "UPDATE" ? ["UPDATE"] : ["INVITE"])
        let exchange = call.exchange()
        _ = call.handle(.recover(exchange, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        #expect(CallScript.sentOffer(call.describe(exchange, attempt: 1))?.method == method)
        let lost = call.handle(.offerResponse(exchange, attempt: 1, .refused(status: status)))
        let request = method == "UPDATE" ? "UPDATE" : "re-INVITE"
        #expect(
            lost == [
                .end(trigger: "remote", reason: "\(status)", downtime: nil),
                .completed(exchange, .failed(.refused(status: status, request: request))),
            ])
        #expect(call.machine.phase == .ended)
    }

    @Test func anyOtherFailureOfAReinviteKeepsTheSessionAndAnotherOfAPlacingEndsIt() {
        // RFC 3261 §14.1: "If a UA receives a non-2xx final response to a re-INVITE, the session
        // parameters MUST remain unchanged, as if no re-INVITE had been issued."
        var call = CallScript.established()
        let hold = call.exchange()
        _ = call.handle(.hold(.user, hold, flow: CallScript.wifi))
        _ = call.describe(hold, attempt: 1)
        let refused = call.handle(.offerResponse(hold, attempt: 1, .refused(status: 500)))
        #expect(refused == [.completed(hold, .failed(.refused(status: 500, request: "re-INVITE")))])
        #expect(call.machine.phase == .active && call.machine.holdReasons.isEmpty)
        let silent = call.exchange()
        _ = call.handle(.hold(.user, silent, flow: CallScript.wifi))
        _ = call.describe(silent, attempt: 1)
        let timeout = call.handle(.offerResponse(silent, attempt: 1, .noAnswer(flowGone: false, lostOnItsOwn: false)))
        #expect(timeout == [.completed(silent, .failed(.noAnswer(request: "re-INVITE")))], "no answer ends nothing")

        var (placing, first) = CallScript.inviting()
        #expect(
            placing.handle(.offerResponse(first, attempt: 1, .refused(status: 486))) == [
                .end(trigger: "remote", reason: "486", downtime: nil),
                .completed(first, .failed(.refused(status: 486, request: "INVITE"))),
            ])
    }

    @Test func aResponseToAnEarlierAttemptIsIgnored() {
        var (call, placing) = CallScript.inviting()
        _ = call.handle(.offerResponse(placing, attempt: 1, .challenged(status: 407, usable: true)))
        _ = call.describe(placing, attempt: 2)
        #expect(call.handle(.offerResponse(placing, attempt: 1, .refused(status: 407))).isEmpty)
        #expect(call.machine.ourOfferPending)
    }
}
