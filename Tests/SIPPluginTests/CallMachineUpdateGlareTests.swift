import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The UPDATE glare race (RFC 3311 §5.2) as a value on a manual clock: the far end's UPDATE
/// that arrives right after its 491 to our UPDATE, before the call took that 491 in.
///
/// RFC 3311 §5.2: "If an UPDATE is received that contains an offer, and the UAS has generated an
/// offer (in an UPDATE, PRACK or INVITE) to which it has not yet received an answer, the UAS MUST
/// reject the UPDATE with a 491 response." An offer already refused with 491 has its final
/// response: no answer is awaited any more, so the far end's UPDATE is answered. §5.1: the UAC
/// that got 491 "SHOULD attempt the UPDATE once more" after its timer, "if it still desires for
/// that session modification to take place".
struct CallMachineUpdateGlareTests {
    let clock = ManualClock()

    @Test func theFarEndsUpdateRightAfterItRefusedOursIsAnsweredNot491() {
        var call = CallMachine(phase: .active, createdAt: clock.now)
        #expect(call.handle(.localOffer(method: "UPDATE"), at: clock.now) == [.sendOffer])
        // The 491 reached our transaction; the far end's UPDATE is handled before the call hears.
        let theirs = call.handle(.remoteOffer(method: "UPDATE", ourOfferRefused: true), at: clock.now)
        #expect(theirs == [.answerOffer])
        #expect(!call.ourOfferPending, "our refused offer no longer holds the slot")
        // Then the call takes our 491 in: no glare timer against an offer being answered...
        let late = call.handle(.localOfferFinal(status: 491, glareWait: .seconds(1)), at: clock.now)
        #expect(late.isEmpty)
        // ...and our retry waits until our answer to theirs went.
        clock.advance(by: .seconds(2))
        #expect(call.handle(.localOffer(method: "UPDATE"), at: clock.now) == [.waitForOfferSlot])
        _ = call.handle(.remoteOfferSettled, at: clock.now)
        #expect(call.handle(.localOffer(method: "UPDATE"), at: clock.now) == [.sendOffer])
    }

    @Test func anUpdateWhileOurOfferStillAwaitsItsAnswerIsRefused491() {
        var call = CallMachine(phase: .active, createdAt: clock.now)
        _ = call.handle(.localOffer(method: "UPDATE"), at: clock.now)
        let theirs = call.handle(.remoteOffer(method: "UPDATE", ourOfferRefused: false), at: clock.now)
        #expect(theirs == [.refuseOffer(status: 491, reason: "Request Pending", retryAfter: nil)])
        #expect(call.ourOfferPending)
    }

    @Test func theRefusalFlagNeverLetsASecondOfferOfTheFarEndIn() {
        // With no offer of ours out, the flag cannot make the far end's second offer win: 500.
        var call = CallMachine(phase: .active, createdAt: clock.now)
        #expect(call.handle(.remoteOffer(method: "UPDATE", ourOfferRefused: true), at: clock.now) == [.answerOffer])
        let second = call.handle(.remoteOffer(method: "UPDATE", ourOfferRefused: true), at: clock.now)
        guard case .refuseOffer(500, _, _)? = second.first else {
            Issue.record("expected 500, got \(second)")
            return
        }
    }
}

/// The transaction layer notes a final non-2xx as it is delivered, before the transaction's owner
/// runs: what lets the call tell that its offer is no longer pending.
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
        #expect(!table.refusalArrived(for: update))
        table.deliver(update.makeResponse(status: 180, reason: "Ringing"), at: .now)
        #expect(!table.refusalArrived(for: update), "a provisional is no refusal")
        table.deliver(update.makeResponse(status: 491, reason: "Request Pending"), at: .now)
        #expect(table.refusalArrived(for: update))
        #expect(!table.refusalArrived(for: other))
        table.deliver(other.makeResponse(status: 200, reason: "OK"), at: .now)
        #expect(!table.refusalArrived(for: other), "a 2xx is an answer, not a refusal")
    }
}
