/// The one offer/answer slot over time: our glare wait and its retry (RFC 3261 §14.1), the
/// recoveries waiting behind another offer, and what goes when the slot frees.
extension CallMachine {
    /// Our offer got 491: it waits a random time (§14.1), the slot open to the far end meanwhile.
    mutating func glared(_ exchange: OfferExchange, at now: ContinuousClock.Instant) -> [CallAction] {
        var waiting = exchange
        waiting.glareRetries += 1
        let wait = GlareWait.duration(ownsCallID: ownsCallID, using: &random)
        waiting.stage = .glareWait(until: now + wait)
        ours = waiting
        return [.note(.glare(wait: wait, method: exchange.method)), .arm(.glareRetry, at: now + wait)]
    }

    /// The glare wait is over: the retry goes, or waits (64×T1 at most) for the far end's offer
    /// answered meanwhile.
    mutating func glareTimerFired(at now: ContinuousClock.Instant) -> [CallAction] {
        guard var exchange = ours, case .glareWait(let until) = exchange.stage, now >= until else { return [] }
        guard theirs == nil else {
            exchange.stage = .glareReady(until: now + timers.transactionTimeout)
            ours = exchange
            return armSlotWait()
        }
        return describeOffer(&exchange)
    }

    /// The path came back or changed: the survival budget is judged, then the call is recovered
    /// over `flow` with a re-INVITE (an UPDATE when the far end allows it, RFC 3311), at once or
    /// once the offer in progress settles. Ours with the same offer (same flow, same hold) is
    /// awaited, and the recovery then coalesces into it; ours with a stale one is CANCELled
    /// (when it went out on this flow) and awaited; the far end's is awaited; each wait is
    /// bounded by 64×T1, after which a stalled INVITE of ours is CANCELled and awaited once more.
    mutating func recover(_ id: ExchangeID, flow: FlowNumber, survival: SurvivalCheck, at now: ContinuousClock.Instant)
        -> [CallAction]
    {
        let downtime: Duration?
        switch judge(survival, completing: id) {
        case .ended(let actions): return actions
        case .survived(let lived): downtime = lived
        }
        guard isEstablished else { return [.completed(id, .succeeded)] }
        let since = downtime != nil ? (survival.loss?.upperBound ?? now) : now
        let exchange = OfferExchange(
            id: id, purpose: .recovery(downtime: downtime, since: since, lossEnded: survival.loss?.upperBound),
            hold: !holdReasons.isEmpty, flow: flow,
            stage: .queued(until: now + timers.transactionTimeout, stalled: false))
        guard offerSlotFree else { return queue(exchange) }
        return startRecovery(exchange)
    }

    private mutating func queue(_ exchange: OfferExchange) -> [CallAction] {
        guard queued.count < Self.maximumQueued else { return [.completed(exchange.id, .failed(.offerInProgress))] }
        var stale = false
        if let pending = ours, case .sent = pending.stage {
            stale = pending.flow != exchange.flow || pending.hold != exchange.hold
        }
        queued.append(exchange)
        return [.note(.recoveryQueued(superseding: stale))] + (stale ? cancelPending(over: exchange.flow) : [])
            + armSlotWait()
    }

    /// A recovery takes the free slot, or coalesces into the last one the far end accepted.
    private mutating func startRecovery(_ exchange: OfferExchange) -> [CallAction] {
        var exchange = exchange
        exchange.hold = !holdReasons.isEmpty
        if case .recovery(_, _, let lossEnded) = exchange.purpose,
            lastRecovery?.covers(flow: exchange.flow, hold: exchange.hold, lossEnded: lossEnded) == true
        {
            return [.note(.recoveryCoalesced), .completed(exchange.id, .succeeded)]
        }
        exchange.method = peerAllowsUpdate ? "UPDATE" : "INVITE"
        return describeOffer(&exchange)
    }

    /// Our pending INVITE, CANCELled when a provisional allows it (§9.1) and it went out on `flow`.
    private func cancelPending(over flow: FlowNumber) -> [CallAction] {
        guard let pending = ours, case .sent = pending.stage, pending.method == "INVITE", early.heardProvisional
        else { return [] }
        return [.cancelOffer(over: flow)]
    }

    /// The slot became free (an offer settled): our glare retry waiting for it goes first, else
    /// the oldest queued recovery.
    mutating func slotFreed(at now: ContinuousClock.Instant) -> [CallAction] {
        guard phase != .ended, theirs == nil else { return [] }
        if var exchange = ours {
            guard case .glareReady = exchange.stage else { return [] }
            return describeOffer(&exchange) + armSlotWait()
        }
        var actions: [CallAction] = []
        while ours == nil, !queued.isEmpty { actions += startRecovery(queued.removeFirst()) }
        return actions + armSlotWait()
    }

    /// A wait for the slot reached its deadline: a glare retry gives up; a queued recovery
    /// CANCELs the stalled INVITE of ours and waits once more, then gives up.
    mutating func slotWaitFired(at now: ContinuousClock.Instant) -> [CallAction] {
        slotWaitDeadline = nil
        var actions: [CallAction] = []
        if let exchange = ours, case .glareReady(let until) = exchange.stage, now >= until {
            actions += fail(exchange, .noRetryAfterGlare, at: now)
        }
        var kept: [OfferExchange] = []
        for var exchange in queued {
            guard case .queued(let until, let stalled) = exchange.stage, now >= until else {
                kept.append(exchange)
                continue
            }
            if stalled {
                actions.append(.completed(exchange.id, .failed(.offerInProgress)))
                continue
            }
            exchange.stage = .queued(until: now + timers.transactionTimeout, stalled: true)
            kept.append(exchange)
            actions += [.note(.offerStalled)] + cancelPending(over: exchange.flow)
        }
        queued = kept
        return actions + armSlotWait()
    }

    /// The waiter of exchange `id` gave up: one that waits (queued, glare, a new flow) ends now;
    /// one whose request is out is seen to its end, and no further attempt goes.
    mutating func abandon(_ id: ExchangeID, at now: ContinuousClock.Instant) -> [CallAction] {
        if let index = queued.firstIndex(where: { $0.id == id }) {
            queued.remove(at: index)
            return [.completed(id, .failed(.cancelled))] + armSlotWait()
        }
        guard var exchange = ours, exchange.id == id else { return [] }
        switch exchange.stage {
        case .glareWait, .glareReady: return [.disarm(.glareRetry)] + fail(exchange, .cancelled, at: now)
        case .flowWait:
            return [.disarm(.restartWait)] + fail(exchange, .noAnswer(request: exchange.requestName), at: now)
        case .describing, .sent, .queued:
            exchange.abandoned = true
            ours = exchange
            return []
        }
    }

    /// Arms the slot-wait timer at the earliest deadline of the waits, or disarms it.
    mutating func armSlotWait() -> [CallAction] {
        var deadlines = queued.compactMap { exchange -> ContinuousClock.Instant? in
            if case .queued(let until, _) = exchange.stage { until } else { nil }
        }
        if let exchange = ours, case .glareReady(let until) = exchange.stage { deadlines.append(until) }
        let next = deadlines.min()
        guard next != slotWaitDeadline else { return [] }
        slotWaitDeadline = next
        return [next.map { .arm(.offerSlotWait, at: $0) } ?? .disarm(.offerSlotWait)]
    }

    /// Ends `exchange` with `failure`: a hold or resume takes its reason back (RFC 6141: the
    /// old session stays), a failed placing ends the call.
    mutating func fail(_ exchange: OfferExchange, _ failure: ExchangeFailure, at now: ContinuousClock.Instant)
        -> [CallAction]
    {
        if ours?.id == exchange.id { ours = nil }
        switch exchange.purpose {
        case .hold(let reason): holdReasons.remove(reason)
        case .resume(let reason): holdReasons.insert(reason)
        case .place:
            let (trigger, reason) = failure.endOfPlacing
            return finish(trigger: trigger, reason: reason) + [.completed(exchange.id, .failed(failure))]
        case .reoffer, .recovery: break
        }
        return [.completed(exchange.id, .failed(failure))] + slotFreed(at: now)
    }
}
