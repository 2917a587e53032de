internal import Logging
internal import ResilienceCore

/// One offer/answer at a time per call (RFC 3261 §14.1: no new INVITE transaction while one is
/// in progress in either direction; an UPDATE with an offer takes the same slot): the slot is
/// `SIPCall.inviteInFlight`, and a newer offer of ours waits here for it instead of failing.
///
/// Invariants: every path that frees the slot (our INVITE or UPDATE settled, our 2xx to the far
/// end's offer sent, the call ended) goes through ``offerSlotFreed(_:)``, which resumes the
/// call's waiters; a waiter is resumed exactly once (slot freed, deadline, or its task cancelled)
/// and then looks at the call again.
extension SIPUserAgent {
    /// Waits until the call has no offer in progress (or is over), at most until `deadline`;
    /// true when the slot is free. A cancelled task stops waiting at once.
    func waitForOfferSlot(_ id: CallID, until deadline: ContinuousClock.Instant) async -> Bool {
        guard calls[id]?.inviteInFlight == true else { return true }
        nextOfferSlotWaiter &+= 1
        let token = nextOfferSlotWaiter
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
            self.resumeOfferSlotWaiter(token)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                } else {
                    offerSlotWaiters[token] = (id, continuation)
                }
            }
        } onCancel: {
            Task { await self.resumeOfferSlotWaiter(token) }
        }
        timer.cancel()
        return calls[id]?.inviteInFlight != true
    }

    /// The call's offer/answer ended (or the call did): the slot is free and its waiters go on.
    func offerSlotFreed(_ id: CallID) {
        calls[id]?.inviteInFlight = false
        for (token, waiter) in offerSlotWaiters where waiter.call == id { resumeOfferSlotWaiter(token) }
    }

    private func resumeOfferSlotWaiter(_ token: UInt64) {
        offerSlotWaiters.removeValue(forKey: token)?.continuation.resume()
    }

    /// A recovery of call `id` over `flow` (holding the call when `hold`) while an offer of the
    /// call is still in progress. Ours with the same offer (same flow, same hold) is awaited: the
    /// recovery then coalesces into it when it is accepted. Ours with a stale offer (another
    /// flow, another hold state) is superseded: CANCELled when it went out on this same flow (a
    /// replaced flow took its transaction with it) and awaited. The far end's is awaited. Each
    /// wait is bounded by 64×T1; an offer of ours still unanswered then has stalled and is
    /// CANCELled too.
    func settlePendingOffer(_ id: CallID, toward flow: SIPTransport, hold: Bool) async {
        guard let call = calls[id], call.inviteInFlight else { return }
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
