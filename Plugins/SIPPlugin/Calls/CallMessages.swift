/// The call layer's messages, each a pure function of what it copies (RFC 3261 §9.1, §12.2.1.1,
/// §13.3.1, §15); the agent sends them.
extension SIPMessage {
    /// A request in a call's dialog (§12.2.1.1): Request-URI and Route from the remote target and
    /// the route set (``Dialog/routing(fallbackTarget:)``; without the dialog, `peer`), From/To
    /// with both tags, our Contact. Via, CSeq and Max-Forwards are added by the sender.
    static func inDialog(
        _ method: String, dialogID: Dialog.ID, dialog: Dialog?, peer: String, from addressOfRecord: String,
        contact: String
    ) -> SIPMessage {
        let (uri, routes) = dialog?.routing(fallbackTarget: peer) ?? (peer, [])
        var request = SIPMessage.request(method, uri: uri)
        for route in routes { request.headers.add("Route", route) }
        request.headers.add("From", "<\(addressOfRecord)>;tag=\(dialogID.localTag)")
        request.headers.add("To", "<\(peer)>" + (dialogID.remoteTag.map { ";tag=\($0)" } ?? ""))
        request.headers.add("Call-ID", dialogID.callID)
        request.headers.add("CSeq", "0 \(method)")
        request.headers.add("Contact", "<\(contact)>")
        return request
    }

    /// The attempt `send` of our offer as it goes: `template` (``inDialog(_:dialogID:dialog:peer:from:contact:)``)
    /// with `via` on top, Max-Forwards, CSeq `cseq`, `Allow`, the `Replaces` asked for, the
    /// credentials of the last challenge, and the offer as its body.
    static func offer(
        _ send: OfferToSend, template: SIPMessage, cseq: UInt32, via: String, allow: String,
        credentials: (name: String, value: String)?
    ) -> SIPMessage {
        var request = SIPMessage(startLine: template.startLine)
        request.headers.add("Via", via)
        request.headers.add("Max-Forwards", "70")
        for field in template.headers { request.headers.add(field.name, field.value) }
        request.headers.set("CSeq", "\(cseq) \(send.method)")
        request.headers.add("Allow", allow)
        if let replaces = send.replaces { request.headers.add("Replaces", replaces) }
        request.headers.add("Content-Type", "application/sdp")
        if let credentials { request.headers.add(credentials.name, credentials.value) }
        request.body = Array(send.offer.serialized().utf8)
        return request
    }

    /// Our 2xx to the far end's request with our `answer`: the dialog's tag, our Contact (when a
    /// flow is open), `Allow`.
    func answered(with answer: SessionDescription, localTag: String, contact: String?, allow: String) -> SIPMessage {
        var ok = makeResponse(status: 200, reason: "OK", toTag: localTag)
        if let contact { ok.headers.add("Contact", "<\(contact)>") }
        ok.headers.add("Allow", allow)
        ok.headers.add("Content-Type", "application/sdp")
        ok.body = Array(answer.serialized().utf8)
        return ok
    }

    /// CANCEL for an INVITE still without a final response (§9.1): the INVITE's Request-URI,
    /// top Via (same branch), Route, From, To and Call-ID, its CSeq number with method CANCEL.
    static func cancel(of invite: SIPMessage) -> SIPMessage {
        var cancel = SIPMessage.request("CANCEL", uri: invite.requestURI ?? "")
        if let via = invite.headers["Via"] { cancel.headers.add("Via", via) }
        for name in ["Max-Forwards", "From", "To", "Call-ID"] {
            if let value = invite.headers[name] { cancel.headers.add(name, value) }
        }
        for route in invite.headers.values("Route") { cancel.headers.add("Route", route) }
        cancel.headers.add("CSeq", "\(invite.cseq?.number ?? 1) CANCEL")
        return cancel
    }

    /// The BYE that ends the dialog a 2xx to our CANCELled `invite` made (§15): to its Contact,
    /// through its Record-Route, with the 2xx's To.
    static func byeAfterCancel(invite: SIPMessage, answer: SIPMessage) -> SIPMessage {
        let (routeSet, target) = answer.routeFromAnswer
        let (uri, routes) = Dialog.routing(remoteTarget: target ?? invite.requestURI ?? "", routeSet: routeSet)
        var bye = SIPMessage.request("BYE", uri: uri)
        for route in routes { bye.headers.add("Route", route) }
        for name in ["From", "Call-ID"] { if let value = invite.headers[name] { bye.headers.add(name, value) } }
        if let to = answer.headers["To"] { bye.headers.add("To", to) }
        bye.headers.add("CSeq", "0 BYE")
        return bye
    }

    /// The route set (Record-Route reversed) and remote target (Contact) a 2xx gives its UAC
    /// (§12.1.2).
    var routeFromAnswer: (routeSet: [String], target: String?) {
        (headers.listValues("Record-Route").reversed(), headers.listValues("Contact").first.map(extractURI))
    }
}

extension SIPMessage {
    /// Whether the far end lists `replaces` in `Supported` or `Allow` (RFC 3891 §4: a UA that
    /// supports Replaces says so in `Supported`; some list it in `Allow`).
    var offersReplaces: Bool {
        (headers.listValues("Supported") + headers.listValues("Allow")).contains {
            $0.trimmingSIPWhitespace().lowercased() == "replaces"
        }
    }
}

extension OfferResponse {
    /// What the final response `final` to our offer (status 200–699) is to the call: a 2xx's
    /// answer read, a challenge checked for a Digest we can answer, any other status.
    init(final: SIPMessage) {
        let status = final.status ?? 500
        switch status {
        case 200..<300:
            let body: SDPBody
            do {
                body = .parsed(try SessionDescription.parse(final.body))
            } catch {
                body = .unparsable("\(error)")
            }
            self = .answered(body, allow: final.headers.listValues("Allow"))
        case 401, 407:
            let name = status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"
            self = .challenged(status: status, usable: DigestChallenge.best(of: final.headers.values(name)) != nil)
        default: self = .refused(status: status)
        }
    }
}
