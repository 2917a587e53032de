import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The call as a value (``CallMachine``) on a manual clock: glare (RFC 3261 §14, RFC 3311 §5),
/// the ringing timeout, early recovery with `Replaces` (RFC 3891) and the survival budget. No
/// sockets: every input carries its instant.
struct CallMachineTests {
    let clock = ManualClock()

    @Test func theFarEndsOfferIsRefused491OnlyWhileOurOwnOfferIsPending() {
        // RFC 3261 §14.2: "A UAS that receives an INVITE on a dialog while an INVITE it had sent
        // on that dialog is in progress MUST return a 491 (Request Pending) response".
        var call = CallMachine(phase: .active, createdAt: clock.now)
        let step1 = call.handle(.localOffer(method: "INVITE"), at: clock.now)
        #expect(step1 == [.sendOffer])
        let step2 = call.handle(.remoteOffer(method: "INVITE"), at: clock.now)
        #expect(
            step2 == [
                .refuseOffer(status: 491, reason: "Request Pending", retryAfter: nil)
            ])
        let step3 = call.handle(.remoteOffer(method: "UPDATE"), at: clock.now)
        #expect(
            step3 == [
                .refuseOffer(status: 491, reason: "Request Pending", retryAfter: nil)
            ], "RFC 3311 §5.2: an UPDATE against our pending offer gets 491 too")
        #expect(call.ourOfferPending)
    }

    @Test func whileWeOnlyWaitOutOurGlareTimerTheFarEndsOfferIsAnswered() {
        var call = CallMachine(phase: .active, createdAt: clock.now)
        _ = call.handle(.localOffer(method: "INVITE"), at: clock.now)
        let wait = Duration.milliseconds(2_500)
        let step4 = call.handle(.localOfferFinal(status: 491, glareWait: wait), at: clock.now)
        #expect(
            step4 == [
                .arm(.glareRetry, at: clock.now + wait)
            ])
        clock.advance(by: .milliseconds(300))
        // Our offer is no longer pending: RFC 3261 §14.2 allows 491 only while it is.
        let step5 = call.handle(.remoteOffer(method: "INVITE"), at: clock.now)
        #expect(step5 == [.answerOffer])
        clock.advance(by: wait)
        let step6 = call.handle(.localOffer(method: "INVITE"), at: clock.now)
        #expect(step6 == [.waitForOfferSlot])
        _ = call.handle(.remoteOfferSettled, at: clock.now)
        let step7 = call.handle(.localOffer(method: "INVITE"), at: clock.now)
        #expect(step7 == [.sendOffer])
    }

    @Test func aSecondOfferWhileTheFarEndsFirstIsOpenGets500WithRetryAfter() throws {
        // RFC 3261 §14.2: a second INVITE before the final response to the first "MUST return a
        // 500 (Server Internal Error) response ... with a randomly chosen value of between 0 and
        // 10 seconds" in Retry-After; RFC 3311 §5.2 says the same for UPDATE.
        var call = CallMachine(phase: .active, createdAt: clock.now)
        let step8 = call.handle(.remoteOffer(method: "INVITE"), at: clock.now)
        #expect(step8 == [.answerOffer])
        let second = call.handle(.remoteOffer(method: "UPDATE"), at: clock.now)
        guard case .refuseOffer(500, _, let retryAfter)? = second.first else {
            Issue.record("expected 500, got \(second)")
            return
        }
        #expect((0...10).contains(try #require(retryAfter)))
        let step9 = call.handle(.localOffer(method: "INVITE"), at: clock.now)
        #expect(step9 == [.waitForOfferSlot])
    }

    @Test func theGlareTimerFreesTheSlotForTheRetry() {
        var call = CallMachine(phase: .active, createdAt: clock.now)
        _ = call.handle(.localOffer(method: "UPDATE"), at: clock.now)
        _ = call.handle(.localOfferFinal(status: 491, glareWait: .seconds(1)), at: clock.now)
        #expect(!call.ourOfferPending, "the far end may offer now")
        let step10 = call.handle(.localOffer(method: "INVITE"), at: clock.now)
        #expect(step10 == [.waitForOfferSlot], "the retry goes first")
        clock.advance(by: .seconds(1))
        let step11 = call.handle(.timerFired(.glareRetry), at: clock.now)
        #expect(step11 == [.sendOffer])
        let step12 = call.handle(.localOffer(method: "UPDATE"), at: clock.now)
        #expect(step12 == [.sendOffer])
        _ = call.handle(.localOfferFinal(status: 200, glareWait: .zero), at: clock.now)
        #expect(call.offerSlotFree)
        _ = call.handle(.localOffer(method: "UPDATE"), at: clock.now)
        _ = call.handle(.localOfferFinal(status: 491, glareWait: .seconds(1)), at: clock.now)
        _ = call.handle(.localOfferWithdrawn, at: clock.now)
        #expect(call.offerSlotFree, "an offer given up during its glare wait frees the slot")
    }

    @Test func aRingingCallEndsWith480AtTheRingingTimeout() {
        var call = CallMachine(phase: .alerting, createdAt: clock.now)
        let armed = call.handle(.ringing(timeout: .seconds(60)), at: clock.now)
        #expect(armed == [.arm(.ringing, at: clock.now + .seconds(60))])
        clock.advance(by: .seconds(59))
        let step13 = call.handle(.timerFired(.ringing), at: clock.now)
        #expect(step13.isEmpty, "a timer early by a second ends nothing")
        clock.advance(by: .seconds(1))
        // RFC 3261 §21.4.18: 480 "The callee's end system was contacted successfully but the
        // callee is currently unavailable".
        let step14 = call.handle(.timerFired(.ringing), at: clock.now)
        #expect(
            step14 == [
                .respondToInvite(status: 480, reason: "Temporarily Unavailable"),
                .end(trigger: "timeout", reason: "480", downtime: nil),
            ])
        #expect(call.phase == .ended)
    }

    @Test func anAnsweredCancelledOrRejectedCallStopsRinging() {
        var answered = CallMachine(phase: .alerting, createdAt: clock.now)
        _ = answered.handle(.ringing(timeout: .seconds(30)), at: clock.now)
        let step15 = answered.handle(.answer, at: clock.now)
        #expect(step15 == [.disarm(.ringing)])
        clock.advance(by: .seconds(31))
        let step16 = answered.handle(.timerFired(.ringing), at: clock.now)
        #expect(step16.isEmpty)

        var cancelled = CallMachine(phase: .alerting, createdAt: clock.now)
        _ = cancelled.handle(.ringing(timeout: .seconds(30)), at: clock.now)
        // §9.2: the INVITE's transaction answered the CANCEL 487; the call is over.
        let step17 = cancelled.handle(.cancelled, at: clock.now)
        #expect(
            step17 == [
                .disarm(.ringing), .end(trigger: "remote", reason: "CANCEL", downtime: nil),
            ])

        var rejected = CallMachine(phase: .alerting, createdAt: clock.now)
        _ = rejected.handle(.ringing(timeout: .seconds(30)), at: clock.now)
        let step18 = rejected.handle(.reject(status: 200, reason: "Rejected"), at: clock.now)
        #expect(
            step18 == [
                .disarm(.ringing), .respondToInvite(status: 400, reason: "Rejected"),
                .end(trigger: "api", reason: "400", downtime: nil),
            ], "a rejection is a final failure status, clamped to 400–699")
    }

    @Test func theRingingTimeoutIsBounded() {
        var call = CallMachine(phase: .alerting, createdAt: clock.now)
        let step19 = call.handle(.ringing(timeout: .zero), at: clock.now)
        #expect(step19 == [.arm(.ringing, at: clock.now + .seconds(1))])
        let step20 = call.handle(.ringing(timeout: .seconds(1_000_000)), at: clock.now)
        #expect(
            step20 == [
                .arm(.ringing, at: clock.now + .seconds(3_600))
            ])
    }

    @Test func anEarlyDialogIsReplacedWhenTheFarEndSupportsReplaces() {
        let dialog = Dialog.ID(callID: "c1@198.18.0.1", localTag: "ours")
        var call = CallMachine(phase: .progressing, createdAt: clock.now)
        _ = call.handle(.provisional(toTag: "theirs", supportsReplaces: true), at: clock.now)
        // RFC 3891 §3: the UAS compares to-tag with its local tag and from-tag with its remote
        // tag; `early-only` keeps a dialog that was answered meanwhile from being replaced.
        let step21 = call.handle(.earlyFlowLost(dialog: dialog), at: clock.now)
        #expect(
            step21 == [
                .ringAgain(replaces: "c1@198.18.0.1;to-tag=theirs;from-tag=ours;early-only")
            ])
    }

    @Test func aRefusedReplacementFallsBackToCancelAndANewInviteForGood() {
        let dialog = Dialog.ID(callID: "c1", localTag: "ours")
        var call = CallMachine(phase: .progressing, createdAt: clock.now)
        _ = call.handle(.provisional(toTag: "theirs", supportsReplaces: true), at: clock.now)
        _ = call.handle(.earlyFlowLost(dialog: dialog), at: clock.now)
        // RFC 3891 §3: a UAS answers 481 for an early dialog it did not initiate; the Replaces
        // INVITE's own 180 told its tag before the refusal.
        _ = call.handle(.provisional(toTag: "second", supportsReplaces: true), at: clock.now)
        let step22 = call.handle(.replacesRefused, at: clock.now)
        #expect(step22 == [.ringAgain(replaces: nil)])
        _ = call.handle(.provisional(toTag: "third", supportsReplaces: true), at: clock.now)
        let step23 = call.handle(.earlyFlowLost(dialog: dialog), at: clock.now)
        #expect(step23 == [.ringAgain(replaces: nil)])
    }

    @Test func withoutReplacesOrAnEarlyDialogTheCallIsCancelledAndRungAgain() {
        let dialog = Dialog.ID(callID: "c1", localTag: "ours")
        var silent = CallMachine(phase: .progressing, createdAt: clock.now)
        _ = silent.handle(.provisional(toTag: "theirs", supportsReplaces: false), at: clock.now)
        let step24 = silent.handle(.earlyFlowLost(dialog: dialog), at: clock.now)
        #expect(step24 == [.ringAgain(replaces: nil)])
        var tagless = CallMachine(phase: .progressing, createdAt: clock.now)
        _ = tagless.handle(.provisional(toTag: nil, supportsReplaces: true), at: clock.now)
        let step25 = tagless.handle(.earlyFlowLost(dialog: dialog), at: clock.now)
        #expect(step25 == [.ringAgain(replaces: nil)])
    }

    @Test func replacesIsReadFromSupportedOrAllow() {
        var ringing = SIPMessage(startLine: .response(status: 180, reason: "Ringing"))
        #expect(!ringing.offersReplaces)
        ringing.headers.add("Supported", "100rel, Replaces, timer")
        #expect(ringing.offersReplaces)
        var allow = SIPMessage(startLine: .response(status: 180, reason: "Ringing"))
        allow.headers.add("Allow", "INVITE, ACK, replaces")
        #expect(allow.offersReplaces)
    }

    @Test func aLossOverTheBudgetEndsTheCallOnceAndAShorterOneIsRecovered() {
        let start = clock.now
        var call = CallMachine(phase: .active, createdAt: start)
        clock.advance(by: .seconds(100))
        let long = (start + .seconds(10))..<(start + .seconds(50))
        let step26 = call.handle(.pathReturned(loss: long, budget: .seconds(30)), at: clock.now)
        #expect(
            step26 == [
                .end(trigger: "outage", reason: "outage", downtime: .seconds(40))
            ])
        var short = CallMachine(phase: .active, createdAt: start)
        let brief = (start + .seconds(10))..<(start + .seconds(15))
        let step27 = short.handle(.pathReturned(loss: brief, budget: .seconds(30)), at: clock.now)
        #expect(step27 == [.recover(downtime: .seconds(5))])
        let step28 = short.handle(.pathReturned(loss: brief, budget: .seconds(30)), at: clock.now)
        #expect(
            step28 == [.recover(downtime: nil)],
            "a loss is news to a call once")
        var keep = CallMachine(phase: .active, createdAt: start)
        let step29 = keep.handle(.pathReturned(loss: long, budget: .zero), at: clock.now)
        #expect(step29 == [.recover(downtime: .seconds(40))])
    }

    @Test func aCallHeldForTwoReasonsResumesOnlyWhenBothAreGone() {
        var call = CallMachine(phase: .active, createdAt: clock.now)
        let user = call.handle(.hold(.user), at: clock.now)
        let interruption = call.handle(.hold(.interruption), at: clock.now)
        #expect(user == [.offer(hold: true)] && interruption.isEmpty, "one hold offer for both reasons")
        let interruptionOver = call.handle(.resume(.interruption), at: clock.now)
        #expect(interruptionOver.isEmpty && call.confirmedPhase(remoteHoldsUs: false) == .held)
        let userResumes = call.handle(.resume(.user), at: clock.now)
        #expect(userResumes == [.offer(hold: false)] && call.confirmedPhase(remoteHoldsUs: true) == .remotelyHeld)
        _ = call.handle(.hold(.user), at: clock.now)
        _ = call.handle(.holdOfferFailed(.user, holding: true), at: clock.now)
        #expect(call.holdReasons.isEmpty, "RFC 6141: a refused hold leaves the old session")
    }

    @Test func theFarEndsAllowSaysWhetherItTakesUpdateAndSilenceChangesNothing() {
        var call = CallMachine(phase: .active, createdAt: clock.now)
        _ = call.handle(.peerAllows(["INVITE", " update", "BYE"]), at: clock.now)
        #expect(call.peerAllowsUpdate)
        _ = call.handle(.peerAllows([]), at: clock.now)
        #expect(call.peerAllowsUpdate, "a message without Allow changes nothing")
        _ = call.handle(.peerAllows(["INVITE", "BYE"]), at: clock.now)
        #expect(!call.peerAllowsUpdate)
    }
}
