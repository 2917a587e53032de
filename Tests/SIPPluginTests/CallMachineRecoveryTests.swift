import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Recoveries of an established call as a value on a manual clock: the survival budget judged
/// once per loss, one offer at a time with the recovery waiting its turn (and CANCELling a stale
/// or stalled INVITE of ours), and a burst of changes coalesced into one re-INVITE.
struct CallMachineRecoveryTests {
    /// A loss from `from` to `to` seconds after the call's creation, with `budget` seconds.
    func survival(_ call: CallScript, from: Int, to: Int, budget: Int) -> SurvivalCheck {
        let created = call.machine.createdAt
        return SurvivalCheck(loss: (created + .seconds(from))..<(created + .seconds(to)), budget: .seconds(budget))
    }

    @Test func aLossOverTheBudgetEndsTheCallWithByeOnceAndAShorterOneIsRecovered() {
        var long = CallScript.established()
        long.clock.advance(by: .seconds(100))
        let x = long.exchange()
        let ended = long.handle(
            .recover(x, flow: CallScript.cellular, survival: survival(long, from: 10, to: 50, budget: 30)))
        #expect(
            ended == [
                .note(.outlivedBudget(downtime: .seconds(40), budget: .seconds(30))),
                .bye(trigger: "outage", reason: "outage", downtime: .seconds(40)), .completed(x, .succeeded),
            ])

        var short = CallScript.established()
        short.clock.advance(by: .seconds(100))
        let first = short.exchange()
        _ = short.handle(
            .recover(first, flow: CallScript.cellular, survival: survival(short, from: 10, to: 15, budget: 30)))
        _ = short.describe(first, attempt: 1)
        let recovered = short.answered(first, attempt: 1)
        let report = recovered.compactMap { if case .report(let report) = $0 { report } else { nil } }.first
        #expect(report?.trigger == "network" && report?.downtime == .seconds(5))
        #expect(report?.recoveryTime == .seconds(85), "from the path's return to the answer")
        // The same loss asked about again (another action for it) is no news: judged once.
        let again = short.exchange()
        _ = short.handle(.recover(again, flow: CallScript.wifi, survival: survival(short, from: 10, to: 15, budget: 1)))
        _ = short.describe(again, attempt: 1)
        let second = short.answered(again, attempt: 1).compactMap {
            if case .report(let report) = $0 { report } else { nil }
        }
        #expect(second.first?.downtime == nil && short.machine.phase == .active)
    }

    @Test func aZeroBudgetKeepsACallAcrossAnyLossAndAResumeIsJudgedToo() {
        var call = CallScript.established()
        call.clock.advance(by: .seconds(500))
        let keep = call.exchange()
        _ = call.handle(
            .recover(keep, flow: CallScript.cellular, survival: survival(call, from: 1, to: 400, budget: 0)))
        #expect(call.machine.ourOfferPending, "recovered, not ended")
        var held = CallScript.established()
        let hold = held.exchange()
        _ = held.handle(.hold(.interruption, hold, flow: CallScript.wifi))
        _ = held.describe(hold, attempt: 1)
        _ = held.answered(hold, attempt: 1, .recvonly)
        held.clock.advance(by: .seconds(100))
        let resume = held.exchange()
        let over = held.handle(
            .resume(
                .interruption, resume, flow: CallScript.wifi, address: "198.18.0.1",
                survival: survival(held, from: 10, to: 50, budget: 30)))
        #expect(over.contains(.bye(trigger: "outage", reason: "outage", downtime: .seconds(40))))
    }

    @Test func aRecoveryWhileOurSameOfferIsOutWaitsAndCoalescesIntoIt() {
        var call = CallScript.established()
        let first = call.exchange()
        _ = call.handle(.recover(first, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        _ = call.describe(first, attempt: 1)
        let second = call.exchange()
        let queued = call.handle(
            .recover(second, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        #expect(
            queued == [
                .note(.recoveryQueued(superseding: false)),
                .arm(.offerSlotWait, at: call.clock.now + CallScript.timers.transactionTimeout),
            ])
        let answered = call.answered(first, attempt: 1)
        #expect(
            answered.suffix(3) == [
                .note(.recoveryCoalesced), .completed(second, .succeeded), .disarm(.offerSlotWait),
            ], "a burst of changes ends in one re-INVITE")
    }

    @Test func aStaleInviteOfOursIsCancelledAndTheRecoveryGoesAfterIt() {
        var call = CallScript.established()
        let stale = call.exchange()
        _ = call.handle(.recover(stale, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
        _ = call.describe(stale, attempt: 1)
        _ = call.handle(.provisional(stale, attempt: 1, status: 100, toTag: "theirs", supportsReplaces: false))
        let newer = call.exchange()
        let superseding = call.handle(
            .recover(newer, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        #expect(
            superseding.prefix(2) == [
                .note(.recoveryQueued(superseding: true)), .cancelOffer(over: CallScript.cellular),
            ])
        let cancelled = call.handle(.offerResponse(stale, attempt: 1, .refused(status: 487)))
        #expect(
            cancelled.prefix(2) == [
                .completed(stale, .failed(.refused(status: 487, request: "re-INVITE"))),
                .describeMedia(.offer(newer, attempt: 1), direction: .sendrecv, answering: nil),
            ])
    }

    @Test func anOfferThatStallsIsCancelledAfter64T1AndTheRecoveryGivesUpAfterTwice() {
        var call = CallScript.established()
        let stalled = call.exchange()
        _ = call.handle(.recover(stalled, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
        _ = call.describe(stalled, attempt: 1)
        _ = call.handle(.provisional(stalled, attempt: 1, status: 100, toTag: nil, supportsReplaces: false))
        let waiting = call.exchange()
        _ = call.handle(.recover(waiting, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
        call.clock.advance(by: CallScript.timers.transactionTimeout)
        let first = call.handle(.timerFired(.offerSlotWait))
        #expect(
            first == [
                .note(.offerStalled), .cancelOffer(over: CallScript.wifi),
                .arm(.offerSlotWait, at: call.clock.now + CallScript.timers.transactionTimeout),
            ])
        call.clock.advance(by: CallScript.timers.transactionTimeout)
        let second = call.handle(.timerFired(.offerSlotWait))
        #expect(second == [.completed(waiting, .failed(.offerInProgress))], "the timer that fired is the last")
    }

    @Test func aQueuedRecoveryGivenUpLeavesAtOnceAndARecoveryOfARingingCallSucceedsEmpty() throws {
        var call = CallScript.established()
        let out = call.exchange()
        _ = call.handle(.recover(out, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
        let queued = call.exchange()
        _ = call.handle(.recover(queued, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        #expect(call.handle(.abandon(queued)) == [.completed(queued, .failed(.cancelled)), .disarm(.offerSlotWait)])
        var ringing = try CallScript.ringing()
        let nothing = ringing.exchange()
        #expect(
            ringing.handle(.recover(nothing, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
                == [.completed(nothing, .succeeded)])
    }

    @Test func everyExchangeStillOpenWhenTheCallEndsCompletes() {
        var call = CallScript.established()
        let out = call.exchange()
        _ = call.handle(.recover(out, flow: CallScript.wifi, survival: SurvivalCheck(budget: .seconds(30))))
        let queued = call.exchange()
        _ = call.handle(.recover(queued, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        #expect(
            call.handle(.byeReceived) == [
                .end(trigger: "remote", reason: "BYE", downtime: nil), .completed(out, .failed(.callEnded)),
                .completed(queued, .failed(.callEnded)),
            ])
        let late = call.exchange()
        #expect(call.handle(.hold(.user, late, flow: CallScript.wifi)) == [.completed(late, .failed(.callEnded))])
        #expect(call.describe(out, attempt: 1).isEmpty)
    }
}
