internal import Logging
internal import ResilienceCore

extension SubscriptionStatus.State {
    /// What a subscription is after this end sent `Expires: 0`: its dialog stays until the
    /// notifier's final NOTIFY, and that NOTIFY asks for nothing more.
    public static let unsubscribed = Self.terminated(reason: "unsubscribed", resubscribe: true)
}

extension SIPUserAgent {
    /// Handles an incoming NOTIFY: matched through the dialog table by Call-ID, our tag (To) and
    /// the notifier's tag (From); answered 481 when no dialog matches or when it would fork one
    /// (a second notifier for one SUBSCRIBE is refused, RFC 6665 §4.1.2.4 lets it be), 400 when a
    /// tag or the CSeq is missing, 500 when its CSeq is lower than the last one (RFC 3261 §12.2.2).
    ///
    /// A NOTIFY that ends a subscription (RFC 6665 §4.1.3) removes its dialog and, unless this
    /// end unsubscribed, asks the runtime for a SUBSCRIBE through `onFlowLost`: that action opens
    /// a new dialog at once (`deactivated`, `timeout`), after the clamped `retry-after`
    /// (`probation`, `giveup`), after the executor's backoff (unknown reason, garbled state), or
    /// fails permanently (`rejected`, `noresource`, `invariant`), so status shows the truth.
    func received(request: SIPMessage, reply: @Sendable (SIPMessage) -> Void) {
        guard request.method?.uppercased() == "NOTIFY" else { return }
        guard let callID = request.headers["Call-ID"], let ourTag = request.tag(in: "To") else {
            reply(request.makeResponse(status: 481, reason: "Subscription Does Not Exist"))
            return
        }
        guard let theirTag = request.tag(in: "From"), let cseq = request.cseq?.number else {
            reply(request.makeResponse(status: 400, reason: "Bad Request"))
            return
        }
        guard case .dialog(let id, let service) = dialogs.match(callID: callID, localTag: ourTag, remoteTag: theirTag),
            var state = subscriptions[service]
        else {
            reply(request.makeResponse(status: 481, reason: "Subscription Does Not Exist"))
            return
        }
        var inOrder = false
        state.dialogID =
            dialogs.modify(id) { dialog in
                dialog.confirm(remoteTag: theirTag)
                inOrder = dialog.accept(request: request, cseq: cseq)
            } ?? id
        guard inOrder else {
            reply(request.makeResponse(status: 500, reason: "Request Out Of Order"))
            return
        }
        reply(request.makeResponse(status: 200, reason: "OK"))
        let wasEnded = if case .terminated = state.status.state { true } else { false }
        let (subscriptionState, expires, retryAfter) = SubscriptionStatus.State.parse(
            request.headers["Subscription-State"] ?? "active")
        // An end already known (this end unsubscribed, or an earlier final NOTIFY) stays the end.
        let endsAgain = if case .terminated = subscriptionState { wasEnded } else { false }
        if !endsAgain { state.status.state = subscriptionState }
        state.status.expires = expires ?? state.status.expires
        state.status.retryAfter = retryAfter
        state.status.notifyCount += 1
        state.status.lastBody = request.body
        if case .terminated(let reason, _) = subscriptionState {
            dialogs.removeAll(ownedBy: service)
            state.needsRecreation = false
            if !wasEnded, let wait = subscriptionState.resubscribeWait(retryAfter: retryAfter) {
                state.resubscribeWait = wait
            }
            logger.notice(
                "sip.subscription-terminated",
                metadata: [
                    "service": "\(service)", "reason": "\(LogText.escaped(reason, limit: 64))",
                    "resubscribe": "\(!wasEnded)",
                ])
            subscriptions[service] = state
            if !wasEnded { onFlowLost([service]) }
        } else {
            subscriptions[service] = state
        }
        eventContinuation.yield(.notify(service: service, status: state.status))
    }
}
