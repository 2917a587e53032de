internal import Logging
public import ResilienceCore

/// Our side of the far end's offers: the app answers or rejects a ringing call, and the call
/// machine's answers and refusals go out through the request being answered (its server
/// transaction): 180, our 2xx with the answer (resent until its ACK for an INVITE), a final
/// refusal.
extension SIPUserAgent {
    /// Answers a ringing incoming call with `media` (nil: ``defaultMedia()``, the built-in echo on
    /// the lent clock): 200 with our SDP answer, resent until ACK.
    public func answer(_ id: CallID, media: (any MediaSession)? = nil, path: NetworkPath) async throws {
        guard calls[id]?.machine.isRinging == true else {
            throw PluginError.permanent("no incoming call \(id) to answer")
        }
        try await answer(id, media: media ?? defaultMedia(), over: try await flow(for: path))
    }

    /// ``answer(_:media:path:)`` over `flow`.
    func answer(_ id: CallID, media: any MediaSession, over flow: SIPTransport) async throws {
        guard calls[id]?.machine.isRinging == true else { throw PluginError.permanent("incoming call \(id) ended") }
        // The app's media session replaces the placeholder the ringing call held.
        calls[id]?.media = media
        calls[id]?.answering?.flow = flow
        await feed(id, .answer)
    }

    /// Rejects a ringing incoming call with `status` (486 Busy Here by default).
    public func reject(_ id: CallID, status: Int = 486) async throws {
        guard calls[id]?.machine.isRinging == true else {
            throw PluginError.permanent("no incoming call \(id) to reject")
        }
        await feed(id, .reject(status: status, reason: "Rejected"))
    }

    /// 180 to the ringing INVITE, with our Contact on the agent's flow.
    func sendRinging(_ id: CallID) {
        guard let call = calls[id], let invite = call.answering else { return }
        var provisional = invite.request.makeResponse(status: 180, reason: "Ringing", toTag: call.dialogID.localTag)
        if let transport { provisional.headers.add("Contact", "<\(contactURI(on: transport))>") }
        invite.respond(provisional, clock.now)
    }

    /// A final refusal of the request being answered (the ringing INVITE, or the far end's
    /// offer the media could not answer), which is answered no more.
    func refuseAnswering(_ id: CallID, status: Int, reason: String) {
        guard let call = calls[id], let invite = call.answering else { return }
        calls[id]?.answering = nil
        invite.respond(
            invite.request.makeResponse(status: status, reason: reason, toTag: call.dialogID.localTag), clock.now)
    }

    /// The far end's request at hand enters the dialog (its CSeq, a target refresh's Contact):
    /// its offer is the one being answered.
    func accept(_ inbound: FarEndRequest?, call id: CallID) {
        guard let inbound, let call = calls[id], let cseq = inbound.request.cseq?.number else { return }
        dialogs.modify(call.dialogID) { _ = $0.accept(request: inbound.request, cseq: cseq) }
        calls[id]?.answering = inbound
    }

    /// Our answer in a 2xx (Contact and `Allow`, the SDP) to the request being answered; for an
    /// INVITE it is kept for the resends the machine asks for until the ACK.
    func sendAnswer(_ answer: SessionDescription, call id: CallID) {
        guard let call = calls[id], let answering = call.answering else { return }
        let ok = answering.request.answered(
            with: answer, localTag: call.dialogID.localTag, contact: (answering.flow ?? transport).map(contactURI(on:)),
            allow: Self.allowedMethods)
        if answering.request.method?.uppercased() == "INVITE" {
            calls[id]?.sentAnswer = SentAnswer(response: ok, respond: answering.respond)
        }
        calls[id]?.answering = nil
        answering.respond(ok, clock.now)
    }
}
