internal import Logging
internal import ResilienceCore

/// Requests the far end sends about calls: a new INVITE (rung with 180 at once), re-INVITE and
/// UPDATE (target refresh and a new offer), ACK for our 2xx, BYE, CANCEL. Everything here is
/// hostile input: a request missing what a dialog needs is answered 400, an offer that does not
/// parse or negotiate 488, one while ours is pending 491 and while theirs is 500 (the call
/// machine decides, ``CallMachine``), a request for no dialog 481, one out of order 500. A
/// ringing call ends 480 at the account's ringing timeout.
extension SIPUserAgent {
    /// Serves an inbound call request; false when `request` is not one (the caller answers it).
    func handleCallRequest(_ request: SIPMessage, transaction: ServerTransaction?) async -> Bool {
        let method = request.method?.uppercased() ?? ""
        guard ["INVITE", "ACK", "BYE", "UPDATE", "CANCEL"].contains(method) else { return false }
        let now = clock.now
        let reply: (SIPMessage) -> Void = { transaction?.respond($0, at: now) }
        guard let callID = request.headers["Call-ID"],
            let fromTag = request.tag(in: "From"),
            let cseq = request.cseq, cseq.method == method || method == "ACK" || method == "CANCEL"
        else {
            if method != "ACK" { reply(request.makeResponse(status: 400, reason: "Bad Request", toTag: randomToken())) }
            return true
        }
        let toTag = request.tag(in: "To")
        if method == "CANCEL" {
            // The transaction layer answered 200 and the INVITE 487; the call is over.
            if let id = calls.first(where: { $0.dialogID.callID == callID && $0.machine.isRinging }) {
                await feed(id, .cancelled)
            } else if transaction != nil {
                reply(request.makeResponse(status: 481, reason: "Call/Transaction Does Not Exist"))
            }
            return true
        }
        if method == "INVITE", toTag == nil {
            let replaces = IncomingReplaces.verdict(request.headers.values("Replaces"), calls: replaceableCalls)
            if case .reject(let status, let reason)? = replaces {
                reply(request.makeResponse(status: status, reason: reason, toTag: randomToken()))
                return true
            }
            let id = await incomingInvite(request, transaction: transaction, reply: reply)
            if case .replace(let old, let confirmed)? = replaces, let id {
                await replace(old, with: id, confirmed: confirmed)
            }
            return true
        }
        guard let toTag,
            case .dialog(let dialogID, _) = dialogs.match(callID: callID, localTag: toTag, remoteTag: fromTag),
            let id = calls.first(where: { $0.dialogID == dialogID })
        else {
            if method != "ACK" { reply(request.makeResponse(status: 481, reason: "Call/Transaction Does Not Exist")) }
            return true
        }
        // §12.2.2: a request whose CSeq is lower than the dialog's remote CSeq "is out of order
        // and MUST be rejected with a 500 (Server Internal Error) response".
        if method != "ACK", dialogs[dialogID]?.isInOrder(cseq.number) == false {
            reply(request.makeResponse(status: 500, reason: "Server Internal Error"))
            return true
        }
        switch method {
        case "ACK": await feed(id, .ackArrived(cseq: cseq.number))
        case "BYE":
            guard dialogs.modify(dialogID, { _ = $0.accept(request: request, cseq: cseq.number) }) != nil else { break }
            reply(request.makeResponse(status: 200, reason: "OK"))
            await feed(id, .byeReceived)
        default:
            guard let transaction else { break }
            await remoteOffer(request, call: id, cseq: cseq.number, transaction: transaction)
        }
        return true
    }

    /// A new call: checked (400, 488 for an offer it cannot answer, 486 when no dialog fits),
    /// rung with 180 at once, reported `alerting`; the app answers it. Returns its id (nil:
    /// refused).
    private func incomingInvite(
        _ request: SIPMessage, transaction: ServerTransaction?, reply: (SIPMessage) -> Void
    ) async -> CallID? {
        let localTag = randomToken()
        guard let transaction, request.headers.listValues("Contact").first != nil, let from = request.headers["From"]
        else {
            reply(request.makeResponse(status: 400, reason: "Bad Request", toTag: localTag))
            return nil
        }
        // §12.1.1: remote tag, target, route set (Record-Route in order) from the INVITE; the
        // 180 and the 200 copy its Record-Route (`makeResponse`), so the caller's ACK and
        // in-dialog requests come back through the proxies that asked to stay on the path.
        let dialog = Dialog(answering: request, localTag: localTag)
        let machine: CallMachine
        do {
            machine = try CallMachine(
                answering: try SessionDescription.parse(request.body), cseq: request.cseq?.number ?? 0,
                localAddress: transport?.localHost, dialog: dialog.id, sdp: newSessionDescriptions(), timers: timers,
                seed: .random(in: .min ... .max), at: clock.now)
        } catch {
            throttledLog.log(
                .notice, "sip.call-bad-offer", metadata: ["error": "\(LogText.escaped("\(error)", limit: 120))"])
            reply(request.makeResponse(status: 488, reason: "Not Acceptable Here", toTag: localTag))
            return nil
        }
        let id = CallID(randomToken())
        guard dialogs.insert(dialog, owner: account.callService(id)) else {
            reply(request.makeResponse(status: 486, reason: "Busy Here", toTag: localTag))
            return nil
        }
        var call = SIPCall(id: id, peer: extractURI(from), media: RTPEchoSession(clock: clock), machine: machine)
        call.answering = FarEndRequest(request: request, respond: { transaction.respond($0, at: $1) }, flow: nil)
        calls[id] = call
        await feed(id, .peerAllows(request.headers.listValues("Allow")))
        await feed(id, .ringing(timeout: account.ringingTimeout))
        return id
    }

    /// A re-INVITE or UPDATE with an offer (RFC 3311 for UPDATE): the call machine decides
    /// (491, 500 with `Retry-After`, 488, or our answer at the current hold state).
    private func remoteOffer(_ request: SIPMessage, call id: CallID, cseq: UInt32, transaction: ServerTransaction)
        async
    {
        // Our offer's final non-2xx may have come before this request (its transaction noted it
        // as it arrived, before its ACK went): the call takes it in first, so the far end's offer
        // sent right after that ACK does not find ours pending (RFC 3261 §14.2).
        if let outgoing = calls[id]?.outgoing, !outgoing.settled, let refusal = table.refusal(for: outgoing.request) {
            await offerSettled(id, outgoing.exchange, attempt: outgoing.attempt, final: refusal, flow: nil)
        }
        let body: SDPBody
        do {
            body = .parsed(try SessionDescription.parse(request.body))
        } catch {
            body = .unparsable("\(error)")
        }
        let inbound = FarEndRequest(request: request, respond: { transaction.respond($0, at: $1) }, flow: transport)
        let method = request.method?.uppercased() ?? "INVITE"
        let offer = CallInput.remoteOffer(method: method, cseq: cseq, offer: body, localAddress: transport?.localHost)
        await feed(id, offer, inbound: inbound)
    }

    /// Timer H: the far end never ACKed our non-2xx final to its (re-)INVITE (§17.2.1), so it
    /// is gone; the call that INVITE belonged to, if still up, is reported ended (`no ACK`).
    func finalNotAcknowledged(_ invite: SIPMessage) async {
        guard let callID = invite.headers["Call-ID"], let fromTag = invite.tag(in: "From") else { return }
        let toTag = invite.tag(in: "To")
        guard
            let id = calls.first(where: { call in
                call.dialogID.callID == callID && call.dialogID.remoteTag == fromTag
                    && (toTag == nil || call.dialogID.localTag == toTag)
            })
        else { return }
        logger.notice("sip.call-final-not-acked", metadata: ["call": "\(id)"])
        await feed(id, .terminate(trigger: "timeout", reason: "no ACK", downtime: nil))
    }
}
