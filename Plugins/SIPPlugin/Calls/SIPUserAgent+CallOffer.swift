internal import Logging
internal import ResilienceCore

/// The I/O of our offers, INVITE and UPDATE through one path: the media session asked for
/// sections, the request built and run in a task of its own (once sent it is settled, an
/// INVITE's 2xx ACKed, RFC 3261 §13.2.2.4, whatever happens to the caller), and its outcome fed
/// back to the call machine, which decides what follows (a retry, a ring-again, the end).
extension SIPUserAgent {
    /// Asks the call's media session for the sections of an offer (on the exchange's flow) or
    /// of our answer (on the flow of the request answered) and feeds them back.
    func describeMedia(
        _ id: CallID, _ request: MediaRequest, direction: SessionDescription.Direction,
        answering offer: SessionDescription?
    ) async {
        guard let call = calls[id] else { return }
        let flow: SIPTransport? =
            switch request {
            case .offer: call.machine.ours.flatMap { call.flows[$0.flow] }
            case .answer: call.answering?.flow
            }
        guard let flow else { return await feed(id, .mediaDescribed(request, .failure(.noFlow), address: "")) }
        let result: Result<[SessionDescription.Media], MediaFailure>
        do {
            result = .success(
                try await call.media.describe(localAddress: flow.localHost, direction: direction, answering: offer))
        } catch {
            result = .failure(.refused("\(error)"))
        }
        await feed(id, .mediaDescribed(request, result, address: flow.localHost))
    }

    /// Builds the attempt's request in the call's dialog (next CSeq, `Allow`, the offer, the
    /// credentials of the last challenge) and runs it in a task of its own.
    func sendOffer(_ id: CallID, _ send: OfferToSend) async {
        guard let call = calls[id], let number = call.machine.ours?.flow, let flow = call.flows[number] else {
            let lost = OfferResponse.noAnswer(flowGone: true, lostOnItsOwn: false)
            return await feed(id, .offerResponse(send.exchange, attempt: send.attempt, lost))
        }
        let template = inDialogRequest(send.method, call: call, flow: flow)
        let request = SIPMessage.offer(
            send, template: template, cseq: nextCSeq(in: call.dialogID), via: flow.newVia(), allow: Self.allowedMethods,
            credentials: authorizationHeader(method: send.method, uri: template.requestURI ?? call.peer))
        calls[id]?.outgoing = OutgoingOffer(request: request, exchange: send.exchange, attempt: send.attempt)
        Task { [request] in
            // A request in a dialog without route set goes to the remote target (§12.2.1.1).
            let carrier = await self.dialogTransport(for: request, over: flow)
            let final: SIPMessage?
            if send.method == "INVITE" {
                final = await self.runInvite(
                    request, call: id, exchange: send.exchange, attempt: send.attempt, over: carrier)
            } else {
                final = try? await runNonInviteTransaction(
                    request, over: carrier, table: self.table, timers: self.timers, clock: self.clock)
            }
            await self.offerSettled(id, send.exchange, attempt: send.attempt, final: final, flow: flow)
        }
    }

    /// The attempt's final response (nil: none came) reaches the call, once: a 2xx confirms the
    /// dialog (tag, target, route set) before the call takes the answer in.
    func offerSettled(
        _ id: CallID, _ exchange: ExchangeID, attempt: Int, final: SIPMessage?, flow: SIPTransport?
    ) async {
        guard let outgoing = calls[id]?.outgoing, outgoing.exchange == exchange, outgoing.attempt == attempt,
            !outgoing.settled
        else { return }
        calls[id]?.outgoing?.settled = true
        guard let final, let status = final.status, let call = calls[id] else {
            let gone = flow.map { transport !== $0 || !$0.isActive } ?? true
            let own = flow.map { lastFlowLostByServer == ObjectIdentifier($0) } ?? false
            return await feed(
                id, .offerResponse(exchange, attempt: attempt, .noAnswer(flowGone: gone, lostOnItsOwn: own)))
        }
        calls.note(final, of: exchange)
        if (200..<300).contains(status),
            let confirmed = dialogs.modify(
                call.dialogID,
                { dialog in
                    if let toTag = final.tag(in: "To") { dialog.confirm(remoteTag: toTag) }
                    dialog.update(fromResponse: final)
                }), confirmed != call.dialogID
        {
            await feed(id, .dialogChanged(confirmed))
        }
        let response = OfferResponse(final: final)
        await feed(id, .offerResponse(exchange, attempt: attempt, response))
    }

    /// Takes the challenge of the exchange's last response for the call path's requests.
    func authorize(_ exchange: ExchangeID) {
        guard let response = calls.response(of: exchange), let status = response.status else { return }
        let name = status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"
        guard let challenge = DigestChallenge.best(of: response.headers.values(name)) else { return }
        callAuth = AuthState(challenge: challenge, isProxy: status == 407)
    }

    /// CANCELs our INVITE of call `id` still without a final response, when it went out on
    /// `flow` (§9.1; the machine saw its provisional); best effort.
    func cancelOffer(_ id: CallID, over number: FlowNumber) {
        guard let call = calls[id], let flow = call.flows[number], let pending = call.outgoing, !pending.settled,
            pending.request.headers["Via"]?.contains(" \(flow.sentBy);") == true
        else { return }
        Task { try? await self.sendCancel(of: pending.request, over: flow) }
    }

    /// Rings the far end of call `id` again over `flow`: what becomes of the abandoned INVITE,
    /// then a new dialog identity for the fresh INVITE (told to the machine).
    func ringAgain(_ id: CallID, _ exchange: ExchangeID, over number: FlowNumber, abandoned: AbandonedInvite) async {
        guard let call = calls[id] else { return }
        let flow = call.flows[number]
        let cancel: SIPMessage?
        switch abandoned {
        case .cancel: cancel = call.outgoing?.request
        case .cancelReplaced: cancel = call.replacedInvite
        case .keepForReplaces, .forget: cancel = nil
        }
        calls[id]?.replacedInvite = abandoned == .keepForReplaces ? call.outgoing?.request : nil
        if let cancel, let flow { Task { try? await self.sendCancel(of: cancel, over: flow) } }
        dialogs.remove(call.dialogID)
        let dialog = Dialog(callID: randomToken(), localTag: randomToken(), isSecure: call.peer.hasPrefix("sips:"))
        guard dialogs.insert(dialog, owner: account.callService(id)) else { return }
        await feed(id, .dialogChanged(dialog.id))
    }
}
