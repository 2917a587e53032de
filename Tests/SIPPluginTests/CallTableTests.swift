import Synchronization
import Testing

@testable import SIPPlugin

/// The agent's one call-state value (``CallTable``): calls, CANCELs owed, BYEs waiting for the
/// path, and the tasks parked on a call, with no agent and no sockets.
struct CallTableTests {
    func call(_ id: String, callID: String = "x") -> SIPCall {
        SIPCall(
            id: CallID(id), isOutgoing: true, peer: "sip:far@198.18.0.9",
            dialogID: Dialog.ID(callID: callID, localTag: "l-\(id)"), offerAnswer: SDPOfferAnswer(sessionID: 7),
            media: RTPEchoSession(), phase: .active, createdAt: .now)
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

    @Test func aChangeResumesTheWaitersOfThatCallOnlyAndEachOnce() {
        var table = CallTable()
        let resumed = Mutex<[String]>([])
        let tokens = (0..<3).map { _ in table.newWaiterToken() }
        #expect(Set(tokens).count == 3, "tokens are never reused")
        table.park(tokens[0], call: CallID("a")) { resumed.withLock { $0.append("a0") } }
        table.park(tokens[1], call: CallID("a")) { resumed.withLock { $0.append("a1") } }
        table.park(tokens[2], call: CallID("b")) { resumed.withLock { $0.append("b") } }
        for waiter in table.callChanged(CallID("a")) { waiter.resume() }
        #expect(resumed.withLock { $0.sorted() } == ["a0", "a1"])
        #expect(table.callChanged(CallID("a")).isEmpty, "a waiter is handed back once")
        #expect(table.removeWaiter(tokens[0]) == nil)
        table.removeWaiter(tokens[2])?.resume()
        #expect(table.callChanged(CallID("b")).isEmpty)
        #expect(resumed.withLock { $0.count } == 3)
    }

    static let invite: SIPMessage? = {
        var invite = SIPMessage.request("INVITE", uri: "sip:far@198.18.0.9")
        invite.headers.add("Call-ID", "x")
        return invite
    }()
}
