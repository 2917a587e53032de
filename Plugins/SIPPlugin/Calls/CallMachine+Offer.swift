/// Our offers, INVITE and UPDATE alike: asked for, described by the media session, sent, and
/// settled by their final response (RFC 3261 §14, RFC 3311 §5, RFC 6141 for failures).
extension CallMachine {
    mutating func hold(_ reason: HoldReason, _ id: ExchangeID, flow: FlowNumber, at now: ContinuousClock.Instant)
        -> [CallAction]
    {
        // A call already held for another reason only records this one.
        guard isEstablished else { return [.completed(id, .failed(.callEnded))] }
        guard holdReasons.insert(reason).inserted, holdReasons.count == 1 else { return [.completed(id, .succeeded)] }
        let exchange = OfferExchange(
            id: id, purpose: .hold(reason), hold: true, flow: flow, stage: .queued(until: now, stalled: false))
        return startLocalOffer(exchange, at: now)
    }

    /// The last reason gone resumes; an interruption ending leaves a user's hold alone, and a
    /// call that stays held is re-offered as held only when its address moved.
    mutating func resume(
        _ reason: HoldReason, _ id: ExchangeID, flow: FlowNumber, address: String, survival: SurvivalCheck?,
        at now: ContinuousClock.Instant
    ) -> [CallAction] {
        if let survival, case .ended(let actions) = judge(survival, completing: id) { return actions }
        guard isEstablished, holdReasons.contains(reason) else { return [.completed(id, .succeeded)] }
        holdReasons.remove(reason)
        let purpose: OfferPurpose
        if holdReasons.isEmpty {
            purpose = .resume(reason)
        } else if sdp.lastSent?.connection?.address != address {
            purpose = .reoffer
        } else {
            return [.completed(id, .succeeded)]
        }
        let exchange = OfferExchange(
            id: id, purpose: purpose, hold: !holdReasons.isEmpty, flow: flow,
            stage: .queued(until: now, stalled: false))
        return startLocalOffer(exchange, at: now)
    }

    /// Takes the slot for `exchange`, or fails it when another offer is in progress.
    mutating func startLocalOffer(_ exchange: OfferExchange, at now: ContinuousClock.Instant) -> [CallAction] {
        var exchange = exchange
        guard offerSlotFree else { return fail(exchange, .offerInProgress, at: now) }
        return describeOffer(&exchange)
    }

    /// The next attempt of our exchange: the media session is asked for its sections.
    mutating func describeOffer(_ exchange: inout OfferExchange) -> [CallAction] {
        exchange.attempts += 1
        exchange.stage = .describing(attempt: exchange.attempts)
        ours = exchange
        let direction: SessionDescription.Direction = exchange.hold ? .sendonly : .sendrecv
        return [.describeMedia(.offer(exchange.id, attempt: exchange.attempts), direction: direction, answering: nil)]
    }

    /// The media session described the attempt: our offer is written (a new `o=` version,
    /// RFC 3264 §8) and sent.
    mutating func offerDescribed(
        _ id: ExchangeID, attempt: Int, _ result: Result<[SessionDescription.Media], MediaFailure>, address: String,
        at now: ContinuousClock.Instant
    ) -> [CallAction] {
        guard var exchange = ours, exchange.id == id, exchange.stage == .describing(attempt: attempt) else { return [] }
        switch result {
        case .failure(.noFlow): return fail(exchange, .media("no flow"), at: now)
        case .failure(.refused(let why)): return fail(exchange, .media(why), at: now)
        case .success(let sections):
            let offer = sdp.offer(address: address, media: sections, hold: exchange.hold)
            exchange.stage = .sent(attempt: attempt, offer: offer, at: now)
            ours = exchange
            early.heardProvisional = false
            let replaces = exchange.purpose == .place ? early.replaces : nil
            let send = OfferToSend(
                exchange: id, attempt: attempt, method: exchange.method, offer: offer, replaces: replaces)
            return [.sendOffer(send)]
        }
    }

    /// The attempt's final outcome.
    mutating func offerResponse(
        _ id: ExchangeID, _ attempt: Int, _ response: OfferResponse, at now: ContinuousClock.Instant
    ) -> [CallAction] {
        guard let exchange = ours, exchange.id == id, case .sent(attempt, let offer, let sentAt) = exchange.stage
        else { return [] }
        switch response {
        case .answered(let body, let allow):
            return answered(exchange, offer: offer, sentAt: sentAt, body, allow: allow, at: now)
        case .challenged(let status, let usable):
            guard usable, exchange.challenges < OfferExchange.maximumChallenges else {
                return refused(exchange, status: status, at: now)
            }
            guard !exchange.abandoned else { return fail(exchange, .cancelled, at: now) }
            var next = exchange
            next.challenges += 1
            return [.authorize(id)] + describeOffer(&next)
        case .refused(let status): return refused(exchange, status: status, at: now)
        case .noAnswer(let flowGone, let lostOnItsOwn):
            return unanswered(exchange, flowGone: flowGone, lostOnItsOwn: lostOnItsOwn, at: now)
        }
    }

    /// A 2xx: the answer is taken in and the call is confirmed in its phase; an answer that does
    /// not parse or match our offer leaves the old session (the exchange still succeeded: the
    /// far end took our request).
    private mutating func answered(
        _ exchange: OfferExchange, offer: SessionDescription, sentAt: ContinuousClock.Instant, _ body: SDPBody,
        allow: [String], at now: ContinuousClock.Instant
    ) -> [CallAction] {
        ours = nil
        early.handedFlow = nil
        notePeerAllows(allow)
        let negotiated: NegotiatedMedia?
        switch body {
        case .unparsable(let why):
            return [.note(.badAnswer(why)), .completed(exchange.id, .succeeded)] + slotFreed(at: now)
        case .parsed(let answer):
            do {
                negotiated = try sdp.received(answer: answer, to: offer)
            } catch {
                return [.note(.badAnswer("\(error)")), .completed(exchange.id, .succeeded)] + slotFreed(at: now)
            }
        }
        phase = confirmedPhase
        var event = report(trigger: "remote")
        event.glareRetries = exchange.glareRetries
        if exchange.purpose != .place { event.reinviteRoundTrip = now - sentAt }
        if case .recovery(let downtime, let since, _) = exchange.purpose {
            lastRecovery = OfferRecord(flow: exchange.flow, hold: exchange.hold, sentAt: sentAt)
            event.trigger = "network"
            event.downtime = downtime
            event.recoveryTime = now - since
        }
        let told: [CallAction] = negotiated.map { [.negotiated($0)] } ?? []
        return told + [.report(event), .completed(exchange.id, .succeeded)] + slotFreed(at: now)
    }

    /// A final non-2xx (a challenge beyond the bound included).
    private mutating func refused(_ exchange: OfferExchange, status: Int, at now: ContinuousClock.Instant)
        -> [CallAction]
    {
        let failure = ExchangeFailure.refused(status: status, request: exchange.requestName)
        if status == 491, exchange.purpose != .place, exchange.glareRetries < GlareWait.maximumRetries {
            guard !exchange.abandoned else { return fail(exchange, .cancelled, at: now) }
            return glared(exchange, at: now)
        }
        if [481, 420, 486].contains(status), exchange.purpose == .place, early.replaces != nil {
            // The far end would not replace its early dialog (RFC 3891 §3: 481 for a dialog it
            // did not initiate, 486 for one answered meanwhile): CANCEL it, ring anew.
            guard exchange.restarts < Self.maximumEarlyRestarts else { return fail(exchange, failure, at: now) }
            early.replacesWasRefused = true
            early.peerSupportsReplaces = false
            early.remoteTag = nil
            return ringAgain(exchange, over: exchange.flow, replacesRefused: true, at: now)
        }
        if status == 481 || status == 408, exchange.purpose != .place {
            // The far end lost the dialog (RFC 3261 §14.1, RFC 3311 §5.4): the call is over, with
            // no BYE for a dialog that is gone.
            ours = nil
            return finish(trigger: "remote", reason: "\(status)") + [.completed(exchange.id, .failed(failure))]
        }
        return fail(exchange, failure, at: now)
    }

    /// No final response: a re-INVITE or UPDATE fails (the session stays); our ringing INVITE
    /// is rung again from a new flow when its flow went (not when the far end is silent).
    private mutating func unanswered(
        _ exchange: OfferExchange, flowGone: Bool, lostOnItsOwn: Bool, at now: ContinuousClock.Instant
    ) -> [CallAction] {
        let failure = ExchangeFailure.noAnswer(request: exchange.requestName)
        guard exchange.purpose == .place, exchange.restarts < Self.maximumEarlyRestarts,
            flowGone || early.handedFlow != nil
        else { return fail(exchange, failure, at: now) }
        if let flow = early.handedFlow { return ringAgain(exchange, over: flow, replacesRefused: false, at: now) }
        // A flow the agent replaced: the policy's `reinvite-call` follows (64×T1 at most); one
        // that ended on its own usually went with its address an instant before the change
        // reaches the runtime, and a server that ended it sends none: 4×T1.
        var waiting = exchange
        let until = now + (lostOnItsOwn ? timers.t1 * 4 : timers.transactionTimeout)
        waiting.stage = .flowWait(until: until)
        ours = waiting
        return [.arm(.restartWait, at: until)]
    }
}
