/// The far end's offers: in its INVITE (answered when the app answers), re-INVITE or UPDATE
/// (answered at once at the current hold state), or refused.
extension CallMachine {
    /// §14.2: "A UAS that receives an INVITE on a dialog while an INVITE it had sent on that
    /// dialog is in progress MUST return a 491 (Request Pending) response to the received
    /// INVITE"; a second INVITE while one of theirs is open gets 500 with `Retry-After` (0–10 s).
    /// RFC 3311 §5.2 says the same of an UPDATE against any pending offer: "the UAS has generated
    /// an offer ... to which it has not yet received an answer". Our glare wait is no pending
    /// offer: the far end's offer is answered, and our retry waits for it. An offer that does
    /// not parse, asks for media where none may go or went back in version is refused 488.
    mutating func remoteOffer(
        method: String, cseq: UInt32, _ body: SDPBody, localAddress: String?, at now: ContinuousClock.Instant
    ) -> [CallAction] {
        if theirs != nil {
            let retryAfter = Int.random(in: 0...10, using: &random)
            return [.refuseRequest(status: 500, reason: "Server Internal Error", retryAfter: retryAfter)]
        }
        if ourOfferPending { return [.refuseRequest(status: 491, reason: "Request Pending", retryAfter: nil)] }
        let notAcceptable = CallAction.refuseRequest(status: 488, reason: "Not Acceptable Here", retryAfter: nil)
        let offer: SessionDescription
        switch body {
        case .unparsable(let why): return [.acceptRequest, .note(.badOffer(why)), notAcceptable]
        case .parsed(let parsed):
            do {
                try sdp.check(offer: parsed, localAddress: localAddress)
            } catch {
                return [.acceptRequest, .note(.badOffer("\(error)")), notAcceptable]
            }
            offer = parsed
        }
        let theirs = TheirOffer(method: method, cseq: cseq, offer: offer, initial: false)
        self.theirs = theirs
        return [.acceptRequest] + describeAnswer(to: theirs)
    }

    /// The media session is asked for the sections of our answer to `offer`.
    func describeAnswer(to offer: TheirOffer) -> [CallAction] {
        let direction = SDPOfferAnswer.answerDirection(to: offer.offer, hold: !holdReasons.isEmpty)
        return [.describeMedia(.answer, direction: direction, answering: offer.offer)]
    }

    /// Our answer is written and sent in a 2xx, resent until its ACK for an INVITE (§13.3.1.4);
    /// the call is confirmed in its phase. Without sections (no flow, the media refused) the
    /// offer is refused, and a call whose first INVITE it was is over.
    mutating func answerDescribed(
        _ result: Result<[SessionDescription.Media], MediaFailure>, address: String, at now: ContinuousClock.Instant
    ) -> [CallAction] {
        guard let offer = theirs, ringingUntil == nil else { return [] }
        let sections: [SessionDescription.Media]
        switch result {
        case .failure(.noFlow): return decline(offer, status: 500, reason: "No Flow", at: now)
        case .failure(.refused): return decline(offer, status: 488, reason: "Not Acceptable Here", at: now)
        case .success(let described): sections = described
        }
        let (answer, negotiated) = sdp.answer(
            offer.offer, address: address, media: sections, hold: !holdReasons.isEmpty)
        theirs = nil
        phase = confirmedPhase
        var actions: [CallAction] = [.sendAnswer(answer)]
        // The wait starts before the media is told: an ACK may come meanwhile.
        if offer.method == "INVITE" { actions += handleAckWait(.answerSent(cseq: offer.cseq, timers: timers), at: now) }
        if let negotiated { actions.append(.negotiated(negotiated)) }
        return actions + [.report(report(trigger: "remote"))] + slotFreed(at: now)
    }

    private mutating func decline(_ offer: TheirOffer, status: Int, reason: String, at now: ContinuousClock.Instant)
        -> [CallAction]
    {
        theirs = nil
        let refusal = CallAction.declineOffer(status: status, reason: reason)
        if offer.initial { return [refusal] + finish(trigger: "api", reason: "\(status)") }
        return [refusal] + slotFreed(at: now)
    }
}
