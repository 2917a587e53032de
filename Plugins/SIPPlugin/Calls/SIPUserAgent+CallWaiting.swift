internal import Logging
internal import ResilienceCore

/// Waiting for a call to change, without polling: a task that needs the call in some state
/// (its offer slot free, a new flow to ring again from) parks until the agent says the call
/// changed, a deadline passes or the task is cancelled, then looks again.
///
/// One offer/answer at a time per call (RFC 3261 §14.1: no new INVITE transaction while one is
/// in progress in either direction; an UPDATE with an offer takes the same slot): the slot is
/// the call machine's (``CallMachine/offerSlot``), and a newer offer of ours waits for it
/// instead of failing.
///
/// Invariants: every change a waiter may wait for goes through ``callChanged(_:)`` (the offer
/// slot freed by ``withdrawOffer(_:)`` or ``remoteOfferSettled(_:)``: our INVITE or UPDATE
/// settled, our 2xx to the far end's offer sent, the call ended; a ringing call handed a new flow); a parked waiter is resumed
/// exactly once; every wait is bounded by its deadline and by a count of wake-ups.
extension SIPUserAgent {
    /// Waits until `ready` holds for the call (nil: the call is over), at most until `deadline`;
    /// whether it holds then. A cancelled task stops waiting at once.
    func waitForCall(
        _ id: CallID, until deadline: ContinuousClock.Instant, _ ready: (SIPCall?) -> Bool
    ) async -> Bool {
        for _ in 0..<256 {
            if ready(calls[id]) { return true }
            guard clock.now < deadline, !Task.isCancelled else { return false }
            await park(id, until: deadline)
        }
        return ready(calls[id])
    }

    /// Waits until the call has no offer in progress (or is over), at most until `deadline`.
    func waitForOfferSlot(_ id: CallID, until deadline: ContinuousClock.Instant) async -> Bool {
        await waitForCall(id, until: deadline) { $0?.machine.offerSlotFree != false }
    }

    /// Takes the call's offer slot for our offer (`method`).
    /// - Throws: when an offer is in progress (or the call is over).
    func takeOfferSlot(_ id: CallID, method: String) throws {
        guard calls[id]?.machine.handle(.localOffer(method: method), at: clock.now) == [.sendOffer] else {
            throw PluginError("an offer/answer is already in progress in call \(id)")
        }
    }

    /// Our offer settled, failed or was given up: the slot is free and its waiters go on.
    func withdrawOffer(_ id: CallID) {
        _ = calls[id]?.machine.handle(.localOfferWithdrawn, at: clock.now)
        callChanged(id)
    }

    /// The far end's offer was answered or refused: the slot is free and its waiters go on.
    func remoteOfferSettled(_ id: CallID) {
        _ = calls[id]?.machine.handle(.remoteOfferSettled, at: clock.now)
        callChanged(id)
    }

    /// Our offer got 491: waits out `wait` with the slot open to the far end's offer (RFC 3261
    /// §14.2: 491 only while our own offer is pending), then takes the slot back for the retry,
    /// after the far end's offer answered meanwhile (bounded by 64×T1). The wait is the call's
    /// ``CallTimer/glareRetry``, fired through the one timer path (`timerFired(_:call:)`).
    func waitOutGlare(_ id: CallID, method: String, wait: Duration) async throws {
        guard calls[id] != nil else { throw PluginError.permanent("call \(id) ended") }
        let retryAt = clock.now + wait
        let armed = calls[id]?.machine.handle(.localOfferFinal(status: 491, glareWait: wait), at: clock.now) ?? []
        // The slot may already be the far end's (its offer came right after our INVITE's ACK):
        // the machine then arms nothing, yet our retry still waits its turn.
        perform(armed.isEmpty ? [.arm(.glareRetry, at: retryAt)] : armed, call: id)
        callChanged(id)
        let fired = await waitForCall(id, until: retryAt + timers.transactionTimeout) { call in
            call == nil || call?.timers[.glareRetry] == nil
        }
        guard fired, !Task.isCancelled else {
            perform([.disarm(.glareRetry)], call: id)
            if Task.isCancelled { throw CancellationError() }
            throw PluginError("call \(id): the glare wait did not end")
        }
        // Bounded: another offer of ours may take the freed slot first; the retry waits again.
        let deadline = clock.now + timers.transactionTimeout
        for _ in 0..<8 {
            guard await waitForOfferSlot(id, until: deadline), calls[id] != nil else { break }
            if calls[id]?.machine.handle(.localOffer(method: method), at: clock.now) == [.sendOffer] { return }
        }
        throw PluginError("call \(id): no retry after glare (the call ended or its offer slot stayed busy)")
    }

    /// Resumes every task waiting on call `id`; each looks at the call again.
    func callChanged(_ id: CallID) {
        for waiter in calls.callChanged(id) { waiter.resume() }
    }

    /// One wait for the next change of call `id` (or `deadline`, or cancellation).
    private func park(_ id: CallID, until deadline: ContinuousClock.Instant) async {
        let token = calls.newWaiterToken()
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
            self.resume(token)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                } else {
                    calls.park(token, call: id) { continuation.resume() }
                }
            }
        } onCancel: {
            Task { await self.resume(token) }
        }
        timer.cancel()
    }

    private func resume(_ token: UInt64) {
        calls.removeWaiter(token)?.resume()
    }

    /// A recovery of call `id` over `flow` (holding the call when `hold`) while an offer of the
    /// call is still in progress. Ours with the same offer (same flow, same hold) is awaited: the
    /// recovery then coalesces into it when it is accepted. Ours with a stale offer (another
    /// flow, another hold state) is superseded: CANCELled when it went out on this same flow (a
    /// replaced flow took its transaction with it) and awaited. The far end's is awaited. Each
    /// wait is bounded by 64×T1; an offer of ours still unanswered then has stalled and is
    /// CANCELled too.
    func settlePendingOffer(_ id: CallID, toward flow: SIPTransport, hold: Bool) async {
        guard let call = calls[id], !call.machine.offerSlotFree else { return }
        let stale = call.offerInFlight.map { !$0.covers(flow: flow, hold: hold, lossEnded: nil) } ?? false
        logger.notice(
            stale ? "sip.call-reinvite-superseded" : "sip.call-reinvite-queued", metadata: ["call": "\(id)"])
        if stale { await cancelPendingInvite(id, over: flow) }
        if await waitForOfferSlot(id, until: clock.now + timers.transactionTimeout) { return }
        logger.notice("sip.call-offer-stalled", metadata: ["call": "\(id)"])
        await cancelPendingInvite(id, over: flow)
        _ = await waitForOfferSlot(id, until: clock.now + timers.transactionTimeout)
    }

    /// CANCELs our INVITE of call `id` still without a final response, when it went out on
    /// `flow` and a provisional allows it (§9.1); best effort.
    private func cancelPendingInvite(_ id: CallID, over flow: SIPTransport) async {
        guard let call = calls[id], call.heardProvisional, let pending = call.outgoingInvite,
            pending.headers["Via"]?.contains(" \(flow.sentBy);") == true
        else { return }
        try? await sendCancel(of: pending, over: flow)
    }
}
