import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// RFC 3891 §3 (the UAS receiving `Replaces`) as a pure rule over our calls: which INVITE
/// replaces which call, and the status of each refusal. §6.1: the header carries the dialog's
/// Call-ID with `to-tag` and `from-tag` as the receiver sees them (`to-tag` is ours).
struct IncomingReplacesTests {
    /// Our confirmed call (we answered it), our outgoing call ringing out with an early dialog,
    /// and a call ringing here.
    let calls = [
        ReplaceableCall(
            id: CallID("up"), callID: "c1", localTag: "l1", remoteTag: "r1", weInitiated: false, isConfirmed: true),
        ReplaceableCall(
            id: CallID("ringing-out"), callID: "c2", localTag: "l2", remoteTag: "r2", weInitiated: true,
            isConfirmed: false),
        ReplaceableCall(
            id: CallID("ringing-here"), callID: "c3", localTag: "l3", remoteTag: "r3", weInitiated: false,
            isConfirmed: false),
    ]

    @Test func anInviteWithoutReplacesIsNoneOfTheseRulesBusiness() {
        #expect(IncomingReplaces.verdict([], calls: calls) == nil)
    }

    @Test func aConfirmedDialogIsReplacedAndEndsWithBye() {
        #expect(
            IncomingReplaces.verdict(["c1;to-tag=l1;from-tag=r1"], calls: calls)
                == .replace(CallID("up"), confirmed: true))
    }

    @Test func theEarlyDialogOfOurOwnRingingInviteIsReplacedAndCancelled() {
        let verdict = IncomingReplaces.verdict(["c2;from-tag=r2;to-tag=l2;early-only"], calls: calls)
        #expect(verdict == .replace(CallID("ringing-out"), confirmed: false))
    }

    @Test func aDialogWeDoNotHaveGets481() {
        for value in ["c9;to-tag=l1;from-tag=r1", "c1;to-tag=r1;from-tag=l1", "c1;to-tag=l1;from-tag=other"] {
            #expect(
                IncomingReplaces.verdict([value], calls: calls)
                    == .reject(status: 481, reason: "Call/Transaction Does Not Exist"), "\(value)")
        }
    }

    @Test func aConfirmedDialogNamedEarlyOnlyGets486() {
        #expect(
            IncomingReplaces.verdict(["c1;to-tag=l1;from-tag=r1;early-only"], calls: calls)
                == .reject(status: 486, reason: "Busy Here"))
    }

    @Test func anEarlyDialogThisUADidNotInitiateGets481AndKeepsRinging() {
        #expect(
            IncomingReplaces.verdict(["c3;to-tag=l3;from-tag=r3"], calls: calls)
                == .reject(status: 481, reason: "Call/Transaction Does Not Exist"))
    }

    @Test func twoReplacesOrOneWithoutItsTagsIsABadRequest() {
        let bad = IncomingReplaces.reject(status: 400, reason: "Bad Request")
        #expect(
            IncomingReplaces.verdict(["c1;to-tag=l1;from-tag=r1", "c2;to-tag=l2;from-tag=r2"], calls: calls) == bad)
        #expect(IncomingReplaces.verdict(["c1;to-tag=l1"], calls: calls) == bad)
        #expect(IncomingReplaces.verdict([";to-tag=l1;from-tag=r1"], calls: calls) == bad)
        #expect(
            IncomingReplaces.verdict(["c1;to-tag=\(String(repeating: "x", count: 300));from-tag=r1"], calls: calls)
                == bad)
    }
}

/// Two sipp callers at the account's Contact (a real Kamailio on loopback is the registrar):
/// the first call is answered, then the second caller's INVITE replaces it (RFC 3891 §3). The
/// account answers the replacing INVITE by itself and ends the replaced call with BYE.
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled && LabRegistrar.isInstalled, "sipp or Kamailio missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct IncomingReplacesSIPpTests {
    @Test func anInviteWithReplacesTakesTheConfirmedCallsPlaceAndTheOldOneGetsBye() async throws {
        try await withLoopbackRegistrar { kamailio in
            let f = try await ContactCallFixture("replaced", at: kamailio)
            let (agent, recorder) = (f.agent, f.recorder)
            let first = try await SIPpHarness.start(scenario: "uac-to-contact-replaced", arguments: f.sippArguments())
            defer { first.stop() }
            let old = try #require(
                await f.rung(), "the first INVITE rang: \(first.errors.suffix(600)) \(first.messages.suffix(1500))")
            try await agent.answer(old, path: loopbackPath())
            let dialog = try #require(await agent.calls[old]?.dialogID)
            let remoteTag = try #require(dialog.remoteTag)
            let replaces = "\(dialog.callID);to-tag=\(dialog.localTag);from-tag=\(remoteTag)"
            let second = try await SIPpHarness.start(
                scenario: "uac-replaces", arguments: f.sippArguments(["-key", "replaces", replaces]))
            defer { second.stop() }
            #expect(
                await second.exitStatus(within: 20) == 0,
                "the replacing INVITE was answered by itself: \(second.errors.suffix(800)) \(second.messages.suffix(1500))"
            )
            #expect(
                await first.exitStatus(within: 20) == 0,
                "the replaced call got its BYE: \(first.errors.suffix(800)) \(first.messages.suffix(1500))")
            let events = await recorder.events(until: { $0.phase == .ended && $0.call != old }, within: 10)
            #expect(events.first { $0.call == old && $0.phase == .ended }?.reason == "replaced")
            let new = events.filter { $0.call != old }.map(\.phase)
            #expect(new == [.alerting, .active, .ended], "\(events)")
            #expect(await agent.activeCalls.isEmpty)
            await agent.close()
        }
    }
}
