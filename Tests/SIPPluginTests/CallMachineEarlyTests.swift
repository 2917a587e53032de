import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Our ringing INVITE across a change of the path, as a value on a manual clock: it is rung
/// again from the new flow (a CANCEL and a fresh INVITE, RFC 3261 §9.1), or replaced in place
/// with `Replaces` (RFC 3891) when the far end supports it; the restart count and the wait for
/// a new flow are the machine's.
struct CallMachineEarlyTests {
    /// A placed call whose INVITE is out; `provisional`: the far end rang (180) with its tag,
    /// listing `replaces` when `replaces`.
    func ringingOut(provisional: Bool = true, replaces: Bool = false) -> (CallScript, ExchangeID) {
        var (call, placing) = CallScript.inviting()
        if provisional {
            let rung = call.handle(
                .provisional(placing, attempt: 1, status: 180, toTag: "theirs", supportsReplaces: replaces))
            #expect(rung == [.report(CallReport(phase: .progressing, trigger: "remote", note: "ringing"))])
        }
        return (call, placing)
    }

    @Test func aRingingCallWhoseFlowWentIsRungAgainTheMomentANewFlowIsHanded() {
        var (call, placing) = ringingOut()
        let lost = call.handle(.offerResponse(placing, attempt: 1, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        #expect(lost == [.arm(.restartWait, at: call.clock.now + CallScript.timers.transactionTimeout)])
        call.clock.advance(by: .seconds(1))
        let handed = call.handle(.newFlow(CallScript.cellular))
        // §9.1: the old INVITE heard a provisional, so its CANCEL may go.
        #expect(
            handed == [
                .disarm(.restartWait), .ringAgain(placing, over: CallScript.cellular, abandoned: .cancel),
                .report(CallReport(phase: .progressing, trigger: "network", note: "recovering")),
                .describeMedia(.offer(placing, attempt: 2), direction: .sendrecv, answering: nil),
            ])
        _ = call.handle(.dialogChanged(Dialog.ID(callID: "c9@198.18.5.1", localTag: "new")))
        #expect(CallScript.sentOffer(call.describe(placing, attempt: 2))?.replaces == nil)
        #expect(CallScript.completes(call.answered(placing, attempt: 2), placing, .succeeded))
        #expect(call.machine.phase == .active)
    }

    @Test func aFlowHandedWhileTheInviteStillRanRingsAgainWhenItFails() {
        var (call, placing) = ringingOut(provisional: false)
        #expect(call.handle(.newFlow(CallScript.cellular)).isEmpty, "the INVITE may still be answered")
        let failed = call.handle(.offerResponse(placing, attempt: 1, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        #expect(
            failed.first == .ringAgain(placing, over: CallScript.cellular, abandoned: .forget),
            "no provisional: no CANCEL")
    }

    @Test func aSilentFarEndOrNoNewFlowEndsTheCall408() {
        // Timer B with the flow still up: the far end is silent, not moved.
        var (silent, first) = ringingOut()
        #expect(
            silent.handle(.offerResponse(first, attempt: 1, .noAnswer(flowGone: false, lostOnItsOwn: false))) == [
                .end(trigger: "timeout", reason: "408", downtime: nil),
                .completed(first, .failed(.noAnswer(request: "INVITE"))),
            ])
        // A flow that ended on its own: the new flow comes within 4×T1 or not at all.
        var (orphan, second) = ringingOut()
        let waiting = orphan.handle(.offerResponse(second, attempt: 1, .noAnswer(flowGone: true, lostOnItsOwn: true)))
        let until = orphan.clock.now + CallScript.timers.t1 * 4
        #expect(waiting == [.arm(.restartWait, at: until)])
        orphan.clock.advance(to: until)
        #expect(
            CallScript.completes(
                orphan.handle(.timerFired(.restartWait)), second, .failed(.noAnswer(request: "INVITE"))))
        #expect(orphan.machine.phase == .ended)
    }

    @Test func aRingingCallIsRungAgainAtMostThreeTimes() {
        var (call, placing) = ringingOut(provisional: false)
        for attempt in 1...3 {
            _ = call.handle(.newFlow(FlowNumber(rawValue: UInt64(10 + attempt))))
            let again = call.handle(
                .offerResponse(placing, attempt: attempt, .noAnswer(flowGone: true, lostOnItsOwn: false)))
            #expect(again.contains { if case .ringAgain = $0 { true } else { false } })
            _ = call.describe(placing, attempt: attempt + 1)
        }
        _ = call.handle(.newFlow(FlowNumber(rawValue: 20)))
        let last = call.handle(.offerResponse(placing, attempt: 4, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        #expect(CallScript.completes(last, placing, .failed(.noAnswer(request: "INVITE"))))
    }

    @Test func anEarlyDialogIsReplacedWhenTheFarEndSupportsReplaces() {
        // RFC 3891 §3: the UAS compares to-tag with its local tag and from-tag with its remote
        // tag; `early-only` keeps a dialog that was answered meanwhile from being replaced.
        var (call, placing) = ringingOut(replaces: true)
        _ = call.handle(.newFlow(CallScript.cellular))
        let again = call.handle(.offerResponse(placing, attempt: 1, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        #expect(
            again.prefix(2) == [
                .note(.earlyReplaces), .ringAgain(placing, over: CallScript.cellular, abandoned: .keepForReplaces),
            ])
        _ = call.handle(.dialogChanged(Dialog.ID(callID: "c9@198.18.5.1", localTag: "new")))
        let sent = CallScript.sentOffer(call.describe(placing, attempt: 2))
        #expect(sent?.replaces == "c1@198.18.0.1;to-tag=theirs;from-tag=ours;early-only")
    }

    @Test func aRefusedReplacementCancelsTheReplacedInviteAndRingsWithoutReplacesForGood() {
        var (call, placing) = ringingOut(replaces: true)
        _ = call.handle(.newFlow(CallScript.cellular))
        _ = call.handle(.offerResponse(placing, attempt: 1, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        _ = call.handle(.dialogChanged(Dialog.ID(callID: "c9@198.18.5.1", localTag: "new")))
        _ = call.describe(placing, attempt: 2)
        // The Replaces INVITE's own 180 gives its tag before the refusal.
        _ = call.handle(.provisional(placing, attempt: 2, status: 180, toTag: "second", supportsReplaces: true))
        // RFC 3891 §3: a UAS answers 481 for an early dialog it did not initiate.
        let refused = call.handle(.offerResponse(placing, attempt: 2, .refused(status: 481)))
        #expect(refused.first == .ringAgain(placing, over: CallScript.cellular, abandoned: .cancelReplaced))
        #expect(CallScript.sentOffer(call.describe(placing, attempt: 3))?.replaces == nil)
        _ = call.handle(.provisional(placing, attempt: 3, status: 180, toTag: "third", supportsReplaces: true))
        _ = call.handle(.newFlow(CallScript.wifi))
        let third = call.handle(.offerResponse(placing, attempt: 3, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        #expect(
            third.first == .ringAgain(placing, over: CallScript.wifi, abandoned: .cancel),
            "a refusal is for the call's life")
    }

    @Test func withoutAnEarlyDialogTagTheCallIsCancelledAndRungAgain() {
        var (call, placing) = CallScript.inviting()
        _ = call.handle(.provisional(placing, attempt: 1, status: 100, toTag: nil, supportsReplaces: true))
        _ = call.handle(.newFlow(CallScript.cellular))
        let again = call.handle(.offerResponse(placing, attempt: 1, .noAnswer(flowGone: true, lostOnItsOwn: false)))
        #expect(again.first == .ringAgain(placing, over: CallScript.cellular, abandoned: .cancel))
    }
}
