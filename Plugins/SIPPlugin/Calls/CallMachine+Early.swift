/// Our ringing INVITE across a change of the path: provisionals tell what the far end supports,
/// a lost flow rings the far end again from the new one.
///
/// Choice: a new INVITE, with `Replaces` (RFC 3891) when the far end supports it, else after a
/// CANCEL; not UPDATE. An UPDATE in the early dialog (RFC 3311) needs an early dialog with the
/// far end's tag and, to carry a new offer, the INVITE's own offer/answer finished (an SDP
/// answer in a reliable provisional): most far ends ring with a plain 180 and never give either,
/// and the INVITE's responses would still be routed to the old address (PJSIP's reasons for
/// hanging up instead, pjsip/pjproject#3344). So the old INVITE is CANCELled (once a provisional
/// came for it) and a fresh INVITE (new Call-ID, new From tag, new Contact and SDP) rings the far
/// end again, without `Replaces`: the far end may never have seen a dialog to replace. A far end
/// that listed `replaces` in `Supported` or `Allow` of a provisional with its tag gets the INVITE
/// with `Replaces: <old Call-ID>;to-tag=<its tag>;from-tag=<ours>;early-only` instead, so its
/// ringing call is replaced, not doubled; a refusal (481, 420, 486) falls back.
///
/// Invariants: at most ``maximumEarlyRestarts`` ring-agains per call; a ring-again waits for the
/// policy's new flow at most 64×T1 (4×T1 when the flow ended on its own) and goes the moment
/// the flow is handed; none follows an INVITE that failed while its flow was still up (timer B:
/// the far end is silent, not moved).
extension CallMachine {
    mutating func provisional(_ id: ExchangeID, attempt: Int, status: Int, toTag: String?, supportsReplaces: Bool)
        -> [CallAction]
    {
        guard let exchange = ours, exchange.id == id, case .sent(attempt, _, _) = exchange.stage else { return [] }
        early.heardProvisional = true
        if let toTag, !toTag.isEmpty { early.remoteTag = toTag }
        early.peerSupportsReplaces = !early.replacesWasRefused && (early.peerSupportsReplaces || supportsReplaces)
        guard status != 100, phase == .progressing else { return [] }
        return [.report(report(trigger: "remote", note: "ringing"))]
    }

    /// The policy handed our ringing call the new path's flow: it rings again now when its
    /// INVITE already failed, else when it does.
    mutating func newFlow(_ flow: FlowNumber, at now: ContinuousClock.Instant) -> [CallAction] {
        guard ownsCallID, phase == .progressing else { return [] }
        early.handedFlow = flow
        guard let exchange = ours, case .flowWait = exchange.stage else { return [] }
        return [.disarm(.restartWait)] + ringAgain(exchange, over: flow, replacesRefused: false, at: now)
    }

    /// No flow came in time: the call is over (408).
    mutating func restartWaitFired(at now: ContinuousClock.Instant) -> [CallAction] {
        guard let exchange = ours, case .flowWait(let until) = exchange.stage, now >= until else { return [] }
        return fail(exchange, .noAnswer(request: exchange.requestName), at: now)
    }

    /// Rings the far end again over `flow` with a new dialog identity (reported `progressing`,
    /// trigger `network`); `replacesRefused`: the far end refused our `Replaces` INVITE.
    mutating func ringAgain(
        _ exchange: OfferExchange, over flow: FlowNumber, replacesRefused: Bool, at now: ContinuousClock.Instant
    ) -> [CallAction] {
        guard !exchange.abandoned else { return fail(exchange, .cancelled, at: now) }
        var next = exchange
        next.restarts += 1
        next.flow = flow
        early.handedFlow = nil
        let abandoned: AbandonedInvite
        var notes: [CallAction] = []
        if replacesRefused {
            abandoned = early.replacedHeardProvisional ? .cancelReplaced : .forget
            early.replaces = nil
        } else if early.peerSupportsReplaces, let remote = early.remoteTag {
            // The UAS matches to-tag with its own (local) tag and from-tag with ours (§3).
            early.replaces = "\(dialog.callID);to-tag=\(remote);from-tag=\(dialog.localTag);early-only"
            early.replacedHeardProvisional = early.heardProvisional
            abandoned = .keepForReplaces
            notes = [.note(.earlyReplaces)]
        } else {
            early.replaces = nil
            abandoned = early.heardProvisional ? .cancel : .forget
        }
        // The next INVITE's early dialog is another one.
        early.remoteTag = nil
        early.heardProvisional = false
        return notes + [
            .ringAgain(next.id, over: flow, abandoned: abandoned),
            .report(report(trigger: "network", note: "recovering")),
        ] + describeOffer(&next)
    }
}
