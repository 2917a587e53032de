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
    /// A call that lived through `loss` for longer than the survival budget (`budget`, the
    /// policy's `call-survival-budget` from the action's context; else ``callSurvivalBudget``) is
    /// ended with BYE instead (reported ended, trigger and reason `outage`, with its downtime).
    ///
    /// An outgoing call still ringing is rung again from the new address instead (see
    /// `recoverEarly(_:path:)`).
    ///
    /// Only one offer runs per call (RFC 3261 §14.1). One still in progress when the network
    /// changes again is settled first (`settlePendingOffer(_:toward:hold:)`): ours with the same
    /// offer is awaited, ours with a stale one CANCELled and awaited, the far end's awaited.
    /// Then the recovery is coalesced, nothing sent, when the far end already accepted the same
    /// recovery offer (same flow, so the same Contact and `c=`; same hold state) since the path
    /// last came back: a burst of changes (an address change is an IPv4 and an IPv6 netlink
    /// change a few milliseconds apart) ends in one re-INVITE with the newest address.
    /// - Parameters:
    ///   - id: the call.
    ///   - path: the path now; the flow and the media address come from it.
    ///   - loss: the last loss of the path (`PluginContext.lastPathLoss`), nil for none.
    ///   - budget: the policy's call survival budget from the action's context
    ///     (`PluginContext.callSurvivalBudget`); nil falls back to ``callSurvivalBudget``.
    public func reinvite(
        _ id: CallID, path: NetworkPath, after loss: Range<ContinuousClock.Instant>? = nil, budget: Duration? = nil
    ) async throws {
        guard let call = calls[id], call.phase != .ended else { throw PluginError.permanent("no call \(id)") }
        guard call.dialogID.remoteTag != nil else { return try await recoverEarly(id, path: path) }
        let started = clock.now
        if try await endIfOutlivedBudget(id, loss: loss, path: path, budget: budget) { return }
        let verdict = calls[id]?.machine.handle(
            .pathReturned(loss: loss, budget: budget ?? callSurvivalBudget), at: started)
        guard case .recover(let downtime)? = verdict?.first else { throw PluginError.permanent("call \(id) ended") }
        let flow = try await flow(for: path)
        await settlePendingOffer(id, toward: flow, hold: call.isHeldHere)
        try Task.checkCancellation()
        guard let settled = calls[id] else { throw PluginError.permanent("call \(id) ended") }
        let hold = settled.isHeldHere
        if settled.lastRecovery?.covers(flow: flow, hold: hold, lossEnded: loss?.upperBound) == true {
            logger.info("sip.call-reinvite-coalesced", metadata: ["call": "\(id)", "address": "\(flow.localHost)"])
            return
        }
        let since = downtime != nil ? (loss?.upperBound ?? started) : started
        let recovery = CallRecovery(downtime: downtime, since: since)
        if settled.machine.peerAllowsUpdate {
            try await sendUpdate(id, over: flow, hold: hold, recovery: recovery)
        } else {
            try await sendInvite(id, over: flow, hold: hold, recovery: recovery)
        }
    }

    /// Ends the call with BYE when it lived through `loss` for longer than the survival budget
    /// (`budget`, else the agent's ``callSurvivalBudget``), reported ended by the outage with the
    /// downtime; true when it did. A loss it survives is left for the recovery to count.
    public func endIfOutlivedBudget(
        _ id: CallID, loss: Range<ContinuousClock.Instant>?, path: NetworkPath, budget: Duration? = nil
    ) async throws -> Bool {
        let budget = max(budget ?? callSurvivalBudget, .zero)
        guard let call = calls[id], call.phase != .ended else { return false }
        var trial = call.machine
        guard
            case .end(let trigger, let reason, let downtime)? = trial.handle(
                .pathReturned(loss: loss, budget: budget), at: clock.now
            ).first
        else { return false }
        calls[id]?.machine = trial
        logger.notice(
            "sip.call-outlived-budget",
            metadata: ["call": "\(id)", "downtime": "\(downtime ?? .zero)", "budget": "\(budget)"])
        guard call.dialogID.remoteTag != nil else {
            end(id, trigger: trigger, reason: reason, downtime: downtime)
            return true
        }
        try await bye(
            id, call: call, flow: try await flow(for: path), trigger: trigger, reason: reason, downtime: downtime)
        return true
    }
}
