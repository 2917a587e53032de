internal import Logging
public import ResilienceCore
internal import Synchronization

/// Requests the far end sends about calls: a new INVITE (rung with 180 at once), re-INVITE and
/// UPDATE (target refresh and a new offer), ACK for our 2xx, BYE. Everything here is hostile
/// input: a request missing what a dialog needs is answered 400, an offer that does not parse
/// or negotiate 488, an offer while ours is pending 491 and while theirs is 500 (the call
/// machine decides, ``CallMachine``), a request for no dialog 481. A ringing call ends 480 at
/// the account's ringing timeout.
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
            if let id = calls.first(where: { $0.dialogID.callID == callID && $0.pendingInvite != nil }) {
                calls[id]?.pendingInvite = nil
                perform(calls[id]?.machine.handle(.cancelled, at: now) ?? [], call: id)
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
            let id = incomingInvite(request, callID: callID, fromTag: fromTag, transaction: transaction, reply: reply)
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
        case "ACK":
            perform(calls[id]?.machine.handle(.ackArrived(cseq: cseq.number), at: now) ?? [], call: id)
        case "BYE":
            guard dialogs.modify(dialogID, { _ = $0.accept(request: request, cseq: cseq.number) }) != nil else { break }
            reply(request.makeResponse(status: 200, reason: "OK"))
            end(id, trigger: "remote", reason: "BYE")
        default:
            await remoteOffer(request, call: id, cseq: cseq.number, reply: reply, transaction: transaction)
        }
        return true
    }

    /// A new call: checked, rung with 180 at once, reported `alerting`; the app answers it.
    /// Returns its id (nil: refused).
    @discardableResult
    private func incomingInvite(
        _ request: SIPMessage, callID: String, fromTag: String, transaction: ServerTransaction?,
        reply: (SIPMessage) -> Void
    ) -> CallID? {
        let localTag = randomToken()
        guard let transaction, request.headers.listValues("Contact").first != nil, let from = request.headers["From"]
        else {
            reply(request.makeResponse(status: 400, reason: "Bad Request", toTag: localTag))
            return nil
        }
        var offerAnswer = SDPOfferAnswer(sessionID: UInt64.random(in: 1...999_999_999))
        do {
            try offerAnswer.received(
                offer: try SessionDescription.parse(request.body), localAddress: transport?.localHost)
        } catch {
            throttledLog.log(
                .notice, "sip.call-bad-offer", metadata: ["error": "\(LogText.escaped("\(error)", limit: 120))"])
            reply(request.makeResponse(status: 488, reason: "Not Acceptable Here", toTag: localTag))
            return nil
        }
        // §12.1.1: remote tag, target, route set (Record-Route in order) from the INVITE; the
        // 180 and the 200 copy its Record-Route (`makeResponse`), so the caller's ACK and
        // in-dialog requests come back through the proxies that asked to stay on the path.
        let dialog = Dialog(answering: request, localTag: localTag)
        let id = CallID(randomToken())
        guard dialogs.insert(dialog, owner: account.callService(id)) else {
            reply(request.makeResponse(status: 486, reason: "Busy Here", toTag: localTag))
            return nil
        }
        var state = SIPCall(
            id: id, isOutgoing: false, peer: extractURI(from), dialogID: dialog.id, offerAnswer: offerAnswer,
            media: RTPEchoSession(clock: clock), phase: .alerting, createdAt: clock.now)
        state.pendingInvite = (request, transaction)
        state.notePeerAllow(request)
        _ = state.machine.handle(.remoteOffer(method: "INVITE"), at: clock.now)
        let ringing = state.machine.handle(.ringing(timeout: account.ringingTimeout), at: clock.now)
        calls[id] = state
        var provisional = request.makeResponse(status: 180, reason: "Ringing", toTag: localTag)
        if let transport { provisional.headers.add("Contact", "<\(contactURI(on: transport))>") }
        reply(provisional)
        report(id, trigger: "remote")
        perform(ringing, call: id)
        return id
    }

    /// Answers a ringing incoming call with `media` (nil: ``defaultMedia()``, the built-in echo on
    /// the lent clock): 200 with our SDP answer, resent until ACK.
    public func answer(_ id: CallID, media: (any MediaSession)? = nil, path: NetworkPath) async throws {
        guard calls[id]?.pendingInvite != nil else { throw PluginError.permanent("no incoming call \(id) to answer") }
        try await answer(id, media: media ?? defaultMedia(), over: try await flow(for: path))
    }

    /// ``answer(_:media:path:)`` over `flow`.
    func answer(_ id: CallID, media: any MediaSession, over flow: SIPTransport) async throws {
        guard let pending = calls[id]?.pendingInvite else {
            throw PluginError.permanent("incoming call \(id) ended")
        }
        calls[id]?.pendingInvite = nil
        perform(calls[id]?.machine.handle(.answer, at: clock.now) ?? [], call: id)
        // The app's media session replaces the placeholder the ringing call held.
        calls[id]?.media = media
        await sendAnswer(to: pending.request, call: id, flow: flow) { pending.transaction.respond($0, at: $1) }
    }

    /// Rejects a ringing incoming call with `status` (486 Busy Here by default).
    public func reject(_ id: CallID, status: Int = 486) throws {
        guard calls[id]?.pendingInvite != nil else {
            throw PluginError.permanent("no incoming call \(id) to reject")
        }
        perform(calls[id]?.machine.handle(.reject(status: status, reason: "Rejected"), at: clock.now) ?? [], call: id)
    }

    /// A re-INVITE or UPDATE with an offer (RFC 3311 for UPDATE): 491 while our own offer is
    /// pending (not while we only wait out a glare timer), 500 with `Retry-After` while another
    /// of theirs is, 488 for an offer that does not parse, else our answer at the current hold
    /// state.
    private func remoteOffer(
        _ request: SIPMessage, call id: CallID, cseq: UInt32, reply: (SIPMessage) -> Void,
        transaction: ServerTransaction?
    ) async {
        guard calls[id] != nil, let transaction else { return }
        let method = request.method?.uppercased() ?? "INVITE"
        // Our re-INVITE's or UPDATE's final non-2xx may have come before this request, noted by
        // its transaction; the call has not taken it in yet, but our offer is no longer pending.
        let ours = [calls[id]?.outgoingInvite, calls[id]?.outgoingUpdate].compactMap { $0 }
        let refused = ours.contains { table.refusalArrived(for: $0) }
        if refused, calls[id]?.machine.ourOfferPending == true { calls[id]?.offerAnswer.rollback() }
        let verdict =
            calls[id]?.machine.handle(.remoteOffer(method: method, ourOfferRefused: refused), at: clock.now) ?? []
        if case .refuseOffer(let status, let reason, let retryAfter)? = verdict.first {
            var refusal = request.makeResponse(status: status, reason: reason)
            if let retryAfter { refusal.headers.add("Retry-After", "\(retryAfter)") }
            reply(refusal)
            return
        }
        guard dialogs.modify(calls[id]!.dialogID, { _ = $0.accept(request: request, cseq: cseq) }) != nil,
            var call = calls[id]
        else {
            remoteOfferSettled(id)
            return
        }
        do {
            try call.offerAnswer.received(
                offer: try SessionDescription.parse(request.body), localAddress: transport?.localHost)
        } catch OfferAnswerError.offerPending {
            remoteOfferSettled(id)
            reply(request.makeResponse(status: 491, reason: "Request Pending"))
            return
        } catch {
            remoteOfferSettled(id)
            throttledLog.log(
                .notice, "sip.call-bad-offer", metadata: ["error": "\(LogText.escaped("\(error)", limit: 120))"])
            reply(request.makeResponse(status: 488, reason: "Not Acceptable Here"))
            return
        }
        calls[id] = call
        guard let flow = transport else {
            refuse(request, call: id, status: 500, reason: "No Flow") { response, _ in reply(response) }
            return
        }
        await sendAnswer(to: request, call: id, flow: flow) { transaction.respond($0, at: $1) }
    }

    /// Writes our answer to the open remote offer and sends it in a 2xx; for an INVITE the 2xx
    /// is resent (the call machine's ``AckWait``) until the ACK arrives or 64×T1 passes.
    private func sendAnswer(
        to request: SIPMessage, call id: CallID, flow: SIPTransport,
        respond: @escaping @Sendable (SIPMessage, ContinuousClock.Instant) -> Void
    ) async {
        guard let call = calls[id], case .remoteOfferReceived(let offer) = call.offerAnswer.state else { return }
        let isInvite = request.method?.uppercased() == "INVITE"
        let hold = call.isHeldHere
        let sections: [SessionDescription.Media]
        do {
            sections = try await call.media.describe(
                localAddress: flow.localHost, direction: SDPOfferAnswer.answerDirection(to: offer, hold: hold),
                answering: offer)
        } catch {
            refuse(request, call: id, respond: respond)
            return
        }
        guard var current = calls[id] else { return }
        guard
            let (answer, negotiated) = try? current.offerAnswer.answer(
                address: flow.localHost, media: sections, hold: hold)
        else {
            refuse(request, call: id, respond: respond)
            return
        }
        var ok = request.makeResponse(status: 200, reason: "OK", toTag: current.dialogID.localTag)
        ok.headers.add("Contact", "<\(contactURI(on: flow))>")
        ok.headers.add("Allow", Self.allowedMethods)
        ok.headers.add("Content-Type", "application/sdp")
        ok.body = Array(answer.serialized().utf8)
        current.phase = current.confirmedPhase
        if isInvite { current.sentAnswer = SentAnswer(response: ok, respond: respond) }
        calls[id] = current
        remoteOfferSettled(id)
        respond(ok, clock.now)
        // §13.3.1.4: the machine has the 2xx resent until its ACK (an ACK may come while the
        // media below is told, so the wait starts first).
        if isInvite, let cseq = request.cseq?.number {
            perform(calls[id]?.machine.handle(.answerSent(cseq: cseq, timers: timers), at: clock.now) ?? [], call: id)
        }
        if let negotiated { try? await current.media.negotiated(negotiated) }
        report(id, trigger: "remote")
    }

    /// Answers the far end's offer with `status` (488 by default) and forgets it; an INVITE ends
    /// here, and frees the call's offer slot with it (a newer offer of ours must not wait 64×T1
    /// for it).
    private func refuse(
        _ request: SIPMessage, call id: CallID, status: Int = 488, reason: String = "Not Acceptable Here",
        respond: (SIPMessage, ContinuousClock.Instant) -> Void
    ) {
        guard let call = calls[id] else { return }
        calls[id]?.offerAnswer = SDPOfferAnswer(sessionID: call.offerAnswer.sessionID)
        respond(request.makeResponse(status: status, reason: reason), clock.now)
        remoteOfferSettled(id)
    }

    /// Timer H: the far end never ACKed our non-2xx final to its (re-)INVITE (§17.2.1), so it
    /// is gone; the call that INVITE belonged to, if still up, is reported ended (`no ACK`).
    func finalNotAcknowledged(_ invite: SIPMessage) {
        guard let callID = invite.headers["Call-ID"], let fromTag = invite.tag(in: "From") else { return }
        let toTag = invite.tag(in: "To")
        guard
            let id = calls.first(where: { call in
                call.dialogID.callID == callID && call.dialogID.remoteTag == fromTag
                    && (toTag == nil || call.dialogID.localTag == toTag)
            })
        else { return }
        logger.notice("sip.call-final-not-acked", metadata: ["call": "\(id)"])
        end(id, trigger: "timeout", reason: "no ACK")
    }
}
