internal import Logging
internal import ResilienceCore

/// The agent's side of ``CallMachine``: it carries out the actions the value returns (timers on
/// the lent clock, final responses to a ringing INVITE, resends of our 2xx until its ACK, the
/// call's end) and feeds the timers back, all through one path (``timerFired(_:call:)``).
///
/// Invariants: a call has at most one task per ``CallTimer``; arming a timer replaces (cancels)
/// the one before; every timer task ends with its call (``end(_:trigger:reason:downtime:)``
/// cancels them) and holds the agent weakly; a timer that fires for a call already gone does
/// nothing.
extension SIPUserAgent {
    /// Carries out `actions` for call `id`. Offer verdicts (`answerOffer`, `refuseOffer`,
    /// `sendOffer`, `waitForOfferSlot`, `offer`) and recoveries are read by the code that asked.
    func perform(_ actions: [CallAction], call id: CallID) {
        for action in actions {
            switch action {
            case .arm(let timer, let at): arm(timer, at: at, call: id)
            case .disarm(let timer): calls[id]?.timers.removeValue(forKey: timer)?.cancel()
            case .respondToInvite(let status, let reason):
                guard let call = calls[id], let pending = call.pendingInvite else { continue }
                calls[id]?.pendingInvite = nil
                pending.transaction.respond(
                    pending.request.makeResponse(status: status, reason: reason, toTag: call.dialogID.localTag),
                    at: clock.now)
            case .retransmitAnswer:
                guard let sent = calls[id]?.sentAnswer else { continue }
                sent.respond(sent.response, clock.now)
            case .end(let trigger, let reason, let downtime):
                end(id, trigger: trigger, reason: reason, downtime: downtime)
            case .answerOffer, .refuseOffer, .sendOffer, .waitForOfferSlot, .recover, .ringAgain, .offer: continue
            }
        }
    }

    /// Starts `timer` of call `id`, firing at `at` on the lent clock.
    private func arm(_ timer: CallTimer, at: ContinuousClock.Instant, call id: CallID) {
        guard calls[id] != nil else { return }
        calls[id]?.timers[timer]?.cancel()
        calls[id]?.timers[timer] = Task { [weak self, clock] in
            guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
            await self?.timerFired(timer, call: id)
        }
    }

    private func timerFired(_ timer: CallTimer, call id: CallID) {
        guard calls[id] != nil else { return }
        calls[id]?.timers[timer] = nil
        let actions = calls[id]?.machine.handle(.timerFired(timer), at: clock.now) ?? []
        // Each forged INVITE that rings unanswered (or is answered and never ACKed) ends here:
        // rate-limited like the wire's warnings, so a flood of them is not a log flood.
        if timer == .ringing, !actions.isEmpty {
            throttledLog.log(.info, "sip.call-ringing-timeout", metadata: ["call": "\(id)"])
        }
        if timer == .ackWait, !actions.isEmpty {
            throttledLog.log(.notice, "sip.call-ack-timeout", metadata: ["call": "\(id)"])
        }
        perform(actions, call: id)
        // A task may wait for this timer (the glare wait) or for what it changed.
        callChanged(id)
    }
}
