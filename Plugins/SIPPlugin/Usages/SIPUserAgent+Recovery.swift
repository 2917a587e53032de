internal import Logging
public import ResilienceCore

/// What a recovery re-INVITE reports: the loss it recovers from and when the clock for its
/// recovery time started (the path's return, or the action's start for a change without loss).
struct CallRecovery {
    var downtime: Duration?
    var since: ContinuousClock.Instant
}

/// Calls across a lost or changed path: re-INVITE with the new Contact and media address, or an
/// end with BYE when the outage outlasted the call survival budget (``CallSurvival``).
extension SIPUserAgent {
    /// Re-INVITEs an established call over the flow for `path` (after an address change or a
    /// restored path): new Contact, new `c=`/`m=` from the media session (which rebinds), the
    /// same hold state (a held call is re-offered as held). A far end that allows UPDATE gets
    /// an UPDATE instead (RFC 3311: the same offer and target refresh, no ACK round). The answer is reported with trigger
    /// `network`, the downtime of `loss`, the re-INVITE's round trip and the recovery time.
    ///
    /// A call that lived through `loss` for longer than ``callSurvivalBudget`` is ended with BYE
    /// instead (reported ended, trigger and reason `outage`, with its downtime).
    ///
    /// An outgoing call still ringing is rung again from the new address instead (see
    /// `recoverEarly(_:path:)`).
    ///
    /// A re-INVITE of ours still pending (the network changed again) is superseded: CANCELled
    /// when it went out on this same flow (a flow that was replaced took its transaction with
    /// it), and awaited for at most 64×T1 before the new one goes.
    /// - Parameters:
    ///   - id: the call.
    ///   - path: the path now; the flow and the media address come from it.
    ///   - loss: the last loss of the path (`PluginContext.lastPathLoss`), nil for none.
    public func reinvite(_ id: CallID, path: NetworkPath, after loss: Range<ContinuousClock.Instant>? = nil)
        async throws
    {
        guard let call = calls[id], call.phase != .ended else { throw PluginError.permanent("no call \(id)") }
        guard call.dialogID.remoteTag != nil else { return try await recoverEarly(id, path: path) }
        let started = clock.now
        if try await endIfOutlivedBudget(id, loss: loss, path: path) { return }
        let downtime = CallSurvival.downtime(of: loss, createdAt: call.createdAt, survivedUntil: call.survivedUntil)
        if downtime != nil { calls[id]?.survivedUntil = loss?.upperBound }
        let flow = try await flow(for: path)
        if call.inviteInFlight, let pending = call.outgoingInvite {
            logger.notice("sip.call-reinvite-superseded", metadata: ["call": "\(id)"])
            if pending.headers["Via"]?.contains(" \(flow.sentBy);") == true {
                try? await sendCancel(of: pending, over: flow)
            }
            let deadline = clock.now + timers.transactionTimeout
            while calls[id]?.inviteInFlight == true, clock.now < deadline {
                try await clock.sleep(until: clock.now + timers.t1, tolerance: nil)
            }
        }
        let since = downtime != nil ? (loss?.upperBound ?? started) : started
        let recovery = CallRecovery(downtime: downtime, since: since)
        let hold = !(calls[id]?.holdReasons.isEmpty ?? true)
        if calls[id]?.peerAllowsUpdate == true {
            try await sendUpdate(id, over: flow, hold: hold, recovery: recovery)
        } else {
            try await sendInvite(id, over: flow, hold: hold, recovery: recovery)
        }
    }

    /// Ends the call with BYE when it lived through `loss` for longer than the survival budget
    /// (reported ended by the outage, with the downtime); true when it did.
    public func endIfOutlivedBudget(_ id: CallID, loss: Range<ContinuousClock.Instant>?, path: NetworkPath)
        async throws -> Bool
    {
        guard let call = calls[id], call.phase != .ended,
            let downtime = CallSurvival.exceeded(
                loss: loss, createdAt: call.createdAt, survivedUntil: call.survivedUntil, budget: callSurvivalBudget)
        else { return false }
        logger.notice(
            "sip.call-outlived-budget",
            metadata: ["call": "\(id)", "downtime": "\(downtime)", "budget": "\(callSurvivalBudget)"])
        guard call.dialogID.remoteTag != nil else {
            end(id, trigger: "outage", reason: "outage", downtime: downtime)
            return true
        }
        try await bye(
            id, call: call, flow: try await flow(for: path), trigger: "outage", reason: "outage",
            downtime: downtime)
        return true
    }
}
