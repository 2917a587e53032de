import Testing

@testable import SIPPlugin

/// The agent's one call-state value (``CallTable``): calls, CANCELs owed, BYEs waiting for the
/// path, and the outcomes of the exchanges waited for, with no agent and no sockets.
struct CallTableTests {
    func call(_ id: String, callID: String = "x") -> SIPCall {
        let machine = CallMachine(
            placing: Dialog.ID(callID: callID, localTag: "l-\(id)"), sdp: SDPOfferAnswer(sessionID: 7),
            timers: SIPTimers(), seed: 1, at: .now)
        return SIPCall(id: CallID(id), peer: "sip:far@198.18.0.9", media: RTPEchoSession(), machine: machine)
    }

    @Test func aRemovedCallIsGoneAndFoundByNoSearch() {
        var table = CallTable()
        table[CallID("a")] = call("a", callID: "one")
        table[CallID("b")] = call("b", callID: "two")
        #expect(table.first { $0.dialogID.callID == "two" } == CallID("b"))
        #expect(table.remove(CallID("b"))?.id == CallID("b"))
        #expect(table.remove(CallID("b")) == nil, "removed once")
        #expect(table.first { $0.dialogID.callID == "two" } == nil)
        #expect(Set(table.all.keys) == [CallID("a")])
    }

    @Test func aCancelWaitingForAProvisionalIsHandedOutOnceAndForgottenWithItsInvite() throws {
        var table = CallTable()
        let flowless = try #require(Self.invite)
        let id = CallID("ringing")
        #expect(table.cancelDue(id) == nil && !table.isCancelling(id))
        table.hungUpRinging(id, PendingCancel(invite: flowless, flow: nil, sent: false))
        #expect(table.isCancelling(id))
        // RFC 3261 §9.1: the CANCEL goes with the first provisional, and only once.
        #expect(table.cancelDue(id)?.invite == flowless)
        #expect(table.cancelDue(id) == nil, "a second provisional sends no second CANCEL")
        table.inviteFinished(id)
        #expect(!table.isCancelling(id))
        table.hungUpRinging(id, PendingCancel(invite: flowless, flow: nil, sent: true))
        #expect(table.cancelDue(id) == nil, "a CANCEL already sent is not due again")
    }

    @Test func atMostTheLimitOfByesWaitAndTheOldestIsDropped() {
        var table = CallTable()
        let dialog = Dialog(callID: "d", localTag: "t", isSecure: false)
        var dropped: [SIPCall] = []
        for n in 0..<(CallTable.deferredByeLimit + 2) {
            if let old = table.deferBye(of: call("c\(n)"), dialog: dialog) { dropped.append(old) }
        }
        #expect(dropped.map(\.id) == [CallID("c0"), CallID("c1")])
        #expect(table.hasDeferredByes)
        let taken = table.takeDeferredByes()
        #expect(taken.count == CallTable.deferredByeLimit && taken.first?.call.id == CallID("c2"))
        #expect(!table.hasDeferredByes && table.takeDeferredByes().isEmpty, "each BYE is handed out once")
    }

    @Test func eachExchangesOutcomeReachesItsWaiterOnceWhetherItCameBeforeOrAfter() async {
        var table = CallTable()
        let (early, late) = (table.newExchange(), table.newExchange())
        #expect(early != late, "exchange ids are never reused")
        table.complete(early, .succeeded)
        #expect(table.takeOutcome(early) == .succeeded, "kept for a waiter that comes later")
        #expect(table.takeOutcome(early) == nil, "handed out once")
        let outcome = await withCheckedContinuation { waiter in
            table.wait(for: late, waiter)
            table.complete(late, .failed(.callEnded))
        }
        #expect(outcome == .failed(.callEnded))
        #expect(table.takeOutcome(late) == nil, "a waiter that got it leaves nothing behind")
    }

    @Test func outcomesNobodyWaitsForAreBounded() {
        var table = CallTable()
        let exchanges = (0..<(CallTable.keptLimit + 3)).map { _ in table.newExchange() }
        for exchange in exchanges { table.complete(exchange, .succeeded) }
        #expect(exchanges.prefix(3).allSatisfy { table.takeOutcome($0) == nil }, "the oldest are dropped")
        #expect(table.takeOutcome(exchanges[exchanges.count - 1]) == .succeeded)
    }

    static let invite: SIPMessage? = {
        var invite = SIPMessage.request("INVITE", uri: "sip:far@198.18.0.9")
        invite.headers.add("Call-ID", "x")
        return invite
    }()
}
