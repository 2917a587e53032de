internal import Logging
internal import ResilienceCore

/// An outgoing call still ringing when the address changes (its INVITE's flow was closed).
///
/// Choice: a new INVITE, with `Replaces` (RFC 3891) when the far end supports it, else after a
/// CANCEL; not UPDATE. An UPDATE in the early dialog (RFC 3311) needs
/// an early dialog with the far end's tag and, to carry a new offer, the INVITE's own
/// offer/answer finished (an SDP answer in a reliable provisional): most far ends ring with a
/// plain 180 and never give either, and the INVITE's responses would still be routed to the
/// old address (PJSIP's reasons for hanging up instead, pjsip/pjproject#3344). So the old
/// INVITE is CANCELled (best effort, same branch, sent from the new flow: a proxy matches it by
/// branch) once a provisional came for it, and a fresh INVITE (new Call-ID, new From tag, new
/// Contact and SDP) rings the far end again, without `Replaces`: the far end may never have
/// seen a dialog to replace (liblinphone does the same for calls without a remote tag). A far
/// end that listed `replaces` in `Supported` or `Allow` of a provisional with its tag gets the
/// INVITE with `Replaces: <old Call-ID>;to-tag=<its tag>;from-tag=<ours>;early-only` instead,
/// so its ringing call is replaced, not doubled; a refusal (481, 420, 486) falls back. The
/// app keeps one ``CallID`` throughout and sees the call as `progressing` with trigger `network`.
///
/// Invariants: at most ``maximumEarlyRestarts`` restarts per INVITE; a restart waits at most
/// 64×T1 for the policy's `reinvite-call` to hand it a new flow (4×T1 when the flow ended on
/// its own: it usually went with its address, but a server that ended it sends no new one)
/// and goes the moment it does (no polling), and none when the INVITE failed while its flow was
/// still up (timer B: the far end is silent, not moved).
extension SIPUserAgent {
    static let maximumEarlyRestarts = 3

    /// Hands a ringing outgoing call the flow of the new path (`reinvite-call` on a call that is
    /// not yet answered). Nothing to do while the INVITE's flow is still the path's flow.
    func recoverEarly(_ id: CallID, path: NetworkPath) async throws {
        guard let call = calls[id], call.isOutgoing, call.dialogID.remoteTag == nil else {
            throw PluginError.permanent("no outgoing call \(id) ringing")
        }
        let flow = try await flow(for: path)
        if let sent = call.outgoingInvite, sent.headers["Via"]?.contains(" \(flow.sentBy);") == true { return }
        logger.notice("sip.call-early-recovery", metadata: ["call": "\(id)", "address": "\(flow.localHost)"])
        calls[id]?.restartFlow = flow
        callChanged(id)
    }

    /// After the INVITE of `id` failed: the flow to ring again from, once `reinvite-call` gave
    /// one; nil when the INVITE failed on a live flow or no new flow came in time: 64×T1 for a
    /// flow the agent replaced, 4×T1 for one that ended on its own.
    func flowForEarlyRestart(_ id: CallID, lost: SIPTransport) async -> SIPTransport? {
        // The agent drops a flow it replaces before failing its transactions: a flow that is
        // no longer the agent's was replaced, even while its socket is still closing. A flow
        // that ended on its own (reported lost) usually went with its address, an instant
        // before the address change reaches the runtime: its `reinvite-call` comes within
        // milliseconds, so a short wait; a server that ended the flow sends none (only a
        // re-REGISTER) and the call ends after that wait.
        let lostOnItsOwn = lastFlowLostByServer == ObjectIdentifier(lost)
        guard transport !== lost || !lost.isActive || calls[id]?.restartFlow != nil else { return nil }
        let deadline = clock.now + (lostOnItsOwn ? timers.t1 * 4 : timers.transactionTimeout)
        let handed = await waitForCall(id, until: deadline) { call in
            call == nil || call?.restartFlow?.isActive == true
        }
        guard handed, let next = calls[id]?.restartFlow, next.isActive else { return nil }
        calls[id]?.restartFlow = nil
        return next
    }

    /// Rings the far end again for call `id` from `flow`, with a new dialog identity for the
    /// fresh INVITE (reported `progressing` with trigger `network`). The call machine decides how
    /// (``CallMachine``, RFC 3891): a far end that supports `Replaces` and gave its tag in a
    /// provisional gets an INVITE that replaces its ringing early dialog (the abandoned INVITE is
    /// kept, CANCELled only if the far end refuses the replacement); otherwise the abandoned
    /// INVITE is CANCELled (when a provisional allows it, §9.1) and a plain INVITE rings anew;
    /// so too after the far end refused a replacement (`replacesRefused`).
    func restartEarly(
        _ id: CallID, abandoning invite: SIPMessage, heardProvisional: Bool, over flow: SIPTransport,
        replacesRefused: Bool = false
    ) {
        guard let call = calls[id] else { return }
        let input = replacesRefused ? CallInput.replacesRefused : .earlyFlowLost(dialog: call.dialogID)
        let plan = calls[id]?.machine.handle(input, at: clock.now) ?? []
        if case .ringAgain(let replaces?)? = plan.first {
            calls[id]?.replacing = (invite, heardProvisional, replaces)
            logger.notice("sip.call-early-replaces", metadata: ["call": "\(id)"])
        } else {
            calls[id]?.replacing = nil
            if heardProvisional { Task { try? await self.sendCancel(of: invite, over: flow) } }
        }
        _ = dialogs.remove(call.dialogID)
        let dialog = Dialog(callID: randomToken(), localTag: randomToken(), isSecure: call.peer.hasPrefix("sips:"))
        guard dialogs.insert(dialog, owner: account.callService(id)) else { return }
        calls[id]?.dialogID = dialog.id
        calls[id]?.heardProvisional = false
        report(id, trigger: "network", "recovering")
    }
}
