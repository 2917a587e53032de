import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The UPDATE glare race (RFC 3311 §5.2) as a value on a manual clock: the far end's UPDATE
/// that arrives right after its 491 to our UPDATE.
///
/// RFC 3311 §5.2: "If an UPDATE is received that contains an offer, and the UAS has generated an
/// offer (in an UPDATE, PRACK or INVITE) to which it has not yet received an answer, the UAS MUST
/// reject the UPDATE with a 491 response." An offer already refused with 491 has its final
/// response: no answer is awaited any more, so the far end's UPDATE is answered. §5.1: the UAC
/// that got 491 "SHOULD attempt the UPDATE once more" after its timer, "if it still desires for
/// that session modification to take place". The agent hands the call our 491 before the far
/// end's UPDATE when the 491 reached our transaction first (``TransactionTable/refusal(for:)``),
/// so the one slot sees them in the order they came.
struct CallMachineUpdateGlareTests {
    /// An established call whose far end allows UPDATE, with our recovery UPDATE out.
    func updating() -> (CallScript, ExchangeID) {
        var call = CallScript.established(allow: ["INVITE", "UPDATE"])
        let update = call.exchange()
        _ = call.handle(.recover(update, flow: CallScript.cellular, survival: SurvivalCheck(budget: .seconds(30))))
        #expect(CallScript.sentOffer(call.describe(update, attempt: 1))?.method == "UPDATE")
        return (call, update)
    }

    @Test func theFarEndsUpdateRightAfterItRefusedOursIsAnsweredNot491() throws {
        var (call, update) = updating()
        let glared = call.handle(.offerResponse(update, attempt: 1, .refused(status: 491)))
        let retryAt = try #require(CallScript.armed(.glareRetry, in: glared))
        let theirs = call.handle(
            .remoteOffer(
                method: "UPDATE", cseq: 2, offer: .parsed(CallScript.far(.sendrecv, version: 2)), localAddress: nil))
        #expect(theirs.first == .acceptRequest, "our refused offer no longer holds the slot")
        #expect(!call.machine.ourOfferPending)
        // The transaction's own delivery of the same 491 comes later: the call took it in once.
        #expect(call.handle(.offerResponse(update, attempt: 1, .refused(status: 491))).isEmpty)
        // Our retry waits until our answer to theirs went.
        call.clock.advance(to: retryAt)
        #expect(CallScript.armed(.offerSlotWait, in: call.handle(.timerFired(.glareRetry))) != nil)
        let answered = call.handle(.mediaDescribed(.answer, .success(CallScript.audio), address: "198.18.5.1"))
        #expect(answered.contains(.describeMedia(.offer(update, attempt: 2), direction: .sendrecv, answering: nil)))
        #expect(CallScript.sentOffer(call.describe(update, attempt: 2))?.method == "UPDATE")
    }

    @Test func anUpdateWhileOurOfferStillAwaitsItsAnswerIsRefused491() {
        var (call, _) = updating()
        let theirs = call.handle(
            .remoteOffer(
                method: "UPDATE", cseq: 2, offer: .parsed(CallScript.far(.sendrecv, version: 2)), localAddress: nil))
        #expect(theirs == [.refuseRequest(status: 491, reason: "Request Pending", retryAfter: nil)])
        #expect(call.machine.ourOfferPending)
    }

    @Test func aSecondOfferOfTheFarEndWhileWeAnswerItsFirstGets500() {
        var call = CallScript.established(allow: ["INVITE", "UPDATE"])
        let offer = SDPBody.parsed(CallScript.far(.sendrecv, version: 2))
        #expect(
            call.handle(.remoteOffer(method: "UPDATE", cseq: 2, offer: offer, localAddress: nil)).first
                == .acceptRequest)
        let second = call.handle(.remoteOffer(method: "UPDATE", cseq: 3, offer: offer, localAddress: nil))
        guard case .refuseRequest(500, _, _)? = second.first else {
            Issue.record("expected 500, got \(second)")
            return
        }
    }
}

/// The transaction layer notes a final non-2xx as it is delivered, before the transaction's owner
/// runs: what lets the agent hand the call its 491 before a request the far end sent after it.
struct TransactionRefusalTests {
    @Test func aRefusalIsNotedOnDeliveryAndOnlyForItsOwnTransaction() {
        let table = TransactionTable()
        var update = SIPMessage.request("UPDATE", uri: "sip:bob@198.18.0.7")
        update.headers.add("Via", "SIP/2.0/UDP 198.18.0.2:5060;branch=z9hG4bKaaaa.1")
        update.headers.add("CSeq", "7 UPDATE")
        var other = update
        other.headers.set("Via", "SIP/2.0/UDP 198.18.0.2:5060;branch=z9hG4bKaaaa.2")
        let (_, sink) = AsyncStream.makeStream(of: TransactionTable.Event.self)
        for request in [update, other] {
            table.open(
                TransactionTable.Key(branch: request.topViaBranch ?? "", method: "UPDATE"),
                flow: ObjectIdentifier(table), sink: sink)
        }
        #expect(table.refusal(for: update) == nil)
        table.deliver(update.makeResponse(status: 180, reason: "Ringing"), at: .now)
        #expect(table.refusal(for: update) == nil, "a provisional is no refusal")
        table.deliver(update.makeResponse(status: 491, reason: "Request Pending"), at: .now)
        #expect(table.refusal(for: update)?.status == 491, "kept to be handed to the call")
        #expect(table.refusal(for: other) == nil)
        table.deliver(other.makeResponse(status: 200, reason: "OK"), at: .now)
        #expect(table.refusal(for: other) == nil, "a 2xx is an answer, not a refusal")
    }
}
