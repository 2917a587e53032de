import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The call as a value (``CallMachine``) on a manual clock: the one offer/answer slot and glare
/// (RFC 3261 §14, RFC 3311 §5), the ringing timeout, hold reasons. No sockets: every input
/// carries its instant, and the script drives the call the way the agent does.
struct CallMachineTests {
    @Test func theFarEndsOfferIsRefused491OnlyWhileOurOwnOfferIsPending() {
        // RFC 3261 §14.2: "A UAS that receives an INVITE on a dialog while an INVITE it had sent
        // on that dialog is in progress MUST return a 491 (Request Pending) response".
        var call = CallScript.established()
        let hold = call.exchange()
        _ = call.handle(.hold(.user, hold, flow: CallScript.wifi))
        #expect(CallScript.sentOffer(call.describe(hold, attempt: 1))?.method == "INVITE")
        let pending = CallAction.refuseRequest(status: 491, reason: "Request Pending", retryAfter: nil)
        #expect(
            call.handle(
                .remoteOffer(
                    method: "INVITE", cseq: 2, offer: .parsed(CallScript.far(.sendrecv, version: 2)), localAddress: nil)
            ) == [pending])
        let update = call.handle(
            .remoteOffer(
                method: "UPDATE", cseq: 3, offer: .parsed(CallScript.far(.sendrecv, version: 2)), localAddress: nil))
        #expect(update == [pending], "RFC 3311 §5.2: an UPDATE against our pending offer gets 491 too")
        #expect(call.machine.ourOfferPending)
    }

    @Test func whileWeOnlyWaitOutOurGlareTimerTheFarEndsOfferIsAnswered() throws {
        var call = CallScript.established()
        let hold = call.exchange()
        _ = call.handle(.hold(.user, hold, flow: CallScript.wifi))
        _ = call.describe(hold, attempt: 1)
        let glared = call.handle(.offerResponse(hold, attempt: 1, .refused(status: 491)))
        let retryAt = try #require(CallScript.armed(.glareRetry, in: glared))
        call.clock.advance(by: .milliseconds(300))
        // Our offer is no longer pending: §14.2 allows 491 only while it is.
        let theirs = call.handle(
            .remoteOffer(
                method: "INVITE", cseq: 2, offer: .parsed(CallScript.far(.sendonly, version: 2)), localAddress: nil))
        #expect(theirs.first == .acceptRequest)
        #expect(theirs.contains { if case .describeMedia(.answer, _, _) = $0 { true } else { false } })
        call.clock.advance(to: retryAt)
        // The retry waits (64×T1 at most) for our answer to theirs.
        let fired = call.handle(.timerFired(.glareRetry))
        #expect(fired == [.arm(.offerSlotWait, at: call.clock.now + CallScript.timers.transactionTimeout)])
        let answered = call.handle(
            .mediaDescribed(.answer, .success(CallScript.audio), address: "198.18.0.1"))
        #expect(answered.contains { if case .sendAnswer = $0 { true } else { false } })
        #expect(
            answered.suffix(2) == [
                .describeMedia(.offer(hold, attempt: 2), direction: .sendonly, answering: nil), .disarm(.offerSlotWait),
            ], "our retry goes once the slot is free")
    }

    @Test func aSecondOfferWhileTheFarEndsFirstIsOpenGets500WithRetryAfter() throws {
        // RFC 3261 §14.2: a second INVITE before the final response to the first "MUST return a
        // 500 (Server Internal Error) response ... with a randomly chosen value of between 0 and
        // 10 seconds" in Retry-After; RFC 3311 §5.2 says the same for UPDATE.
        var call = CallScript.established()
        let offer = SDPBody.parsed(CallScript.far(.sendrecv, version: 2))
        _ = call.handle(.remoteOffer(method: "INVITE", cseq: 2, offer: offer, localAddress: nil))
        let second = call.handle(.remoteOffer(method: "UPDATE", cseq: 3, offer: offer, localAddress: nil))
        guard case .refuseRequest(500, _, let retryAfter)? = second.first else {
            Issue.record("expected 500, got \(second)")
            return
        }
        #expect((0...10).contains(try #require(retryAfter)))
        let hold = call.exchange()
        let busy = call.handle(.hold(.user, hold, flow: CallScript.wifi))
        #expect(busy == [.completed(hold, .failed(.offerInProgress))], "one offer/answer at a time (§14.1)")
        #expect(call.machine.holdReasons.isEmpty, "RFC 6141: a hold that could not go leaves the old session")
    }

    @Test func anUnusableOfferIsRefused488AndTheSlotStaysFree() {
        var call = CallScript.established()
        let bad = call.handle(
            .remoteOffer(method: "UPDATE", cseq: 2, offer: .unparsable("no v= line"), localAddress: nil))
        #expect(
            bad == [
                .acceptRequest, .note(.badOffer("no v= line")),
                .refuseRequest(status: 488, reason: "Not Acceptable Here", retryAfter: nil),
            ])
        let old = call.handle(
            .remoteOffer(
                method: "UPDATE", cseq: 3, offer: .parsed(CallScript.far(.sendrecv, version: 0)), localAddress: nil))
        #expect(
            old.contains(.refuseRequest(status: 488, reason: "Not Acceptable Here", retryAfter: nil)), "o= went back")
        #expect(call.machine.offerSlotFree)
    }

    @Test func aRingingCallEndsWith480AtTheRingingTimeout() throws {
        var call = try CallScript.ringing()
        #expect(call.machine.phase == .alerting && call.machine.isRinging)
        call.clock.advance(by: .seconds(59))
        #expect(call.handle(.timerFired(.ringing)).isEmpty, "a timer early by a second ends nothing")
        call.clock.advance(by: .seconds(1))
        // RFC 3261 §21.4.18: 480 "The callee's end system was contacted successfully but the
        // callee is currently unavailable".
        #expect(
            call.handle(.timerFired(.ringing)) == [
                .note(.ringingTimedOut), .respondToInvite(status: 480, reason: "Temporarily Unavailable"),
                .end(trigger: "timeout", reason: "480", downtime: nil),
            ])
        #expect(call.machine.phase == .ended)
    }

    @Test func ringingIsRungReportedAndBounded() throws {
        var call = try CallScript.ringing()
        let rung = call.handle(.ringing(timeout: .zero))
        #expect(rung.first == .sendRinging && rung.last == .arm(.ringing, at: call.clock.now + .seconds(1)))
        let long = call.handle(.ringing(timeout: .seconds(1_000_000)))
        #expect(long.last == .arm(.ringing, at: call.clock.now + .seconds(3_600)))
    }

    @Test func anAnsweredCancelledOrRejectedCallStopsRinging() throws {
        var answered = try CallScript.ringing()
        #expect(
            answered.handle(.answer) == [
                .disarm(.ringing),
                .describeMedia(.answer, direction: .sendrecv, answering: CallScript.far(.sendrecv)),
            ])
        answered.clock.advance(by: .seconds(61))
        #expect(answered.handle(.timerFired(.ringing)).isEmpty)
        let ok = answered.handle(.mediaDescribed(.answer, .success(CallScript.audio), address: "198.18.0.1"))
        #expect(
            ok.contains(.report(CallReport(phase: .active, trigger: "remote"))) && answered.machine.phase == .active)
        #expect(answered.machine.ackWait?.cseq == 1, "our 2xx waits for its ACK (§13.3.1.4)")

        var cancelled = try CallScript.ringing()
        // §9.2: the INVITE's transaction answered the CANCEL 487; the call is over.
        #expect(
            cancelled.handle(.cancelled) == [
                .disarm(.ringing), .end(trigger: "remote", reason: "CANCEL", downtime: nil),
            ])

        var rejected = try CallScript.ringing()
        #expect(
            rejected.handle(.reject(status: 200, reason: "Rejected")) == [
                .disarm(.ringing), .respondToInvite(status: 400, reason: "Rejected"),
                .end(trigger: "api", reason: "400", downtime: nil),
            ], "a rejection is a final failure status, clamped to 400–699")
    }

    @Test func anAnswerTheMediaCannotGiveRefusesTheInviteAndEndsTheCall() throws {
        var call = try CallScript.ringing()
        _ = call.handle(.answer)
        let refused = call.handle(.mediaDescribed(.answer, .failure(.refused("no codec")), address: "198.18.0.1"))
        #expect(
            refused == [
                .declineOffer(status: 488, reason: "Not Acceptable Here"),
                .end(trigger: "api", reason: "488", downtime: nil),
            ])
    }

    @Test func aCallHeldForTwoReasonsResumesOnlyWhenBothAreGone() {
        var call = CallScript.established()
        let (user, interruption) = (call.exchange(), call.exchange())
        let userHold = call.handle(.hold(.user, user, flow: CallScript.wifi))
        #expect(
            userHold.count == 1 && userHold.first.map { if case .describeMedia = $0 { true } else { false } } == true)
        _ = call.describe(user, attempt: 1)
        _ = call.answered(user, attempt: 1, .recvonly)
        #expect(call.machine.phase == .held)
        #expect(
            call.handle(.hold(.interruption, interruption, flow: CallScript.wifi)) == [
                .completed(interruption, .succeeded)
            ],
            "one hold offer for both reasons")
        let over = call.exchange()
        #expect(
            call.handle(.resume(.interruption, over, flow: CallScript.wifi, address: "198.18.0.1", survival: nil))
                == [.completed(over, .succeeded)], "the user still holds it, at the same address")
        let resume = call.exchange()
        _ = call.handle(.resume(.user, resume, flow: CallScript.wifi, address: "198.18.0.1", survival: nil))
        #expect(CallScript.sentOffer(call.describe(resume, attempt: 1))?.offer.direction(ofMedia: 0) == .sendrecv)
        let refused = call.handle(.offerResponse(resume, attempt: 1, .refused(status: 488)))
        #expect(refused.first == .completed(resume, .failed(.refused(status: 488, request: "re-INVITE"))))
        #expect(call.machine.holdReasons == [.user], "RFC 6141: a refused resume leaves the call held")
    }

    @Test func aHeldCallIsReofferedHeldOnlyWhenItsAddressMoved() {
        var call = CallScript.established()
        let (user, interruption) = (call.exchange(), call.exchange())
        _ = call.handle(.hold(.user, user, flow: CallScript.wifi))
        _ = call.describe(user, attempt: 1)
        _ = call.answered(user, attempt: 1, .recvonly)
        _ = call.handle(.hold(.interruption, interruption, flow: CallScript.wifi))
        let moved = call.exchange()
        _ = call.handle(.resume(.interruption, moved, flow: CallScript.cellular, address: "198.18.5.1", survival: nil))
        let sent = call.handle(
            .mediaDescribed(.offer(moved, attempt: 1), .success(CallScript.audio), address: "198.18.5.1"))
        #expect(
            CallScript.sentOffer(sent)?.offer.direction(ofMedia: 0) == .sendonly, "still held, from the new address")
    }

    @Test func theFarEndsAllowSaysWhetherItTakesUpdateAndSilenceChangesNothing() {
        var call = CallScript.established()
        _ = call.handle(.peerAllows(["INVITE", " update", "BYE"]))
        #expect(call.machine.peerAllowsUpdate)
        _ = call.handle(.peerAllows([]))
        #expect(call.machine.peerAllowsUpdate, "a message without Allow changes nothing")
        _ = call.handle(.peerAllows(["INVITE", "BYE"]))
        #expect(!call.machine.peerAllowsUpdate)
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
}
