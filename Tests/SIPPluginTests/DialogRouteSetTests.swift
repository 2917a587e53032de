import Testing

@testable import SIPPlugin

/// RFC 3261 §12 route sets and remote targets, as values: what the UAS copies into its
/// responses, what each side keeps, and where every in-dialog request goes.
struct DialogRouteSetTests {
    /// An INVITE from a caller behind two record-routing proxies.
    static func invite(recordRoute: [String] = ["<sip:p1.example;lr>", "<sip:p2.example;lr;ftag=x>"]) -> SIPMessage {
        var invite = SIPMessage.request("INVITE", uri: "sip:netres@198.18.0.1:5060")
        invite.headers.add("Via", "SIP/2.0/UDP 198.18.0.10;branch=z9hG4bKp1")
        invite.headers.add("Record-Route", recordRoute.joined(separator: ", "))
        invite.headers.add("From", "<sip:alice@example.com>;tag=alice1")
        invite.headers.add("To", "<sip:netres@example.com>")
        invite.headers.add("Call-ID", "call-1@198.18.0.9")
        invite.headers.add("CSeq", "7 INVITE")
        invite.headers.add("Contact", "<sip:alice@198.18.0.9:5070>")
        return invite
    }

    @Test func theUASCopiesRecordRouteIntoEveryResponseThatCreatesTheDialog() {
        // §12.1.1: "The UAS MUST copy all Record-Route header field values from the request into
        // the response ... and MUST maintain the order of those values."
        let invite = Self.invite()
        for status in [180, 183, 200] {
            let response = invite.makeResponse(status: status, reason: "x", toTag: "ours")
            #expect(
                response.headers.listValues("Record-Route") == ["<sip:p1.example;lr>", "<sip:p2.example;lr;ftag=x>"])
        }
        #expect(invite.makeResponse(status: 100, reason: "Trying").headers.values("Record-Route").isEmpty)
        #expect(invite.makeResponse(status: 486, reason: "Busy", toTag: "ours").headers.values("Record-Route").isEmpty)
        var reinvite = invite
        reinvite.headers.set("To", "<sip:netres@example.com>;tag=ours")
        #expect(
            reinvite.makeResponse(status: 200, reason: "OK").headers.values("Record-Route").isEmpty,
            "a response inside the dialog creates nothing")
    }

    @Test func theUASKeepsRecordRouteInOrderAndTheCallersContactAsTarget() {
        // §12.1.1: "The route set MUST be set to the list of URIs in the Record-Route header
        // field from the request, taken in order and preserving all URI parameters."
        let dialog = Dialog(answering: Self.invite(), localTag: "ours")
        #expect(dialog.routeSet == ["<sip:p1.example;lr>", "<sip:p2.example;lr;ftag=x>"])
        #expect(dialog.remoteTarget == "sip:alice@198.18.0.9:5070")
        #expect(dialog.id == Dialog.ID(callID: "call-1@198.18.0.9", localTag: "ours", remoteTag: "alice1"))
        #expect(dialog.remoteCSeq == 7)
        // The BYE goes to the caller's Contact through the proxies, loose routing.
        let (uri, routes) = dialog.routing(fallbackTarget: "sip:alice@example.com")
        #expect(uri == "sip:alice@198.18.0.9:5070" && routes == dialog.routeSet)
    }

    @Test func theUACReversesRecordRouteOnceAndKeepsItAcrossTargetRefreshes() {
        // §12.1.2: "The route set MUST be set to the list of URIs in the Record-Route header
        // field from the response, taken in reverse order and preserving all URI parameters."
        var dialog = Dialog(callID: "c", localTag: "l")
        var ok = SIPMessage(startLine: .response(status: 200, reason: "OK"))
        ok.headers.add("Contact", "<sip:bob@198.18.0.20>")
        ok.headers.add("Record-Route", "<sip:p2.example;lr>, <sip:p1.example;lr>")
        dialog.confirm(remoteTag: "bob1")
        dialog.update(fromResponse: ok)
        #expect(dialog.routeSet == ["<sip:p1.example;lr>", "<sip:p2.example;lr>"])
        // §12.2.1.2: a 2xx to a target refresh replaces the remote target ("MUST replace the
        // dialog's remote target URI with the URI from the Contact header field"); the route
        // set stays as the dialog was established.
        var refresh = SIPMessage(startLine: .response(status: 200, reason: "OK"))
        refresh.headers.add("Contact", "<sip:bob@198.18.0.21>")
        refresh.headers.add("Record-Route", "<sip:other.example;lr>")
        dialog.update(fromResponse: refresh)
        #expect(dialog.remoteTarget == "sip:bob@198.18.0.21")
        #expect(dialog.routeSet == ["<sip:p1.example;lr>", "<sip:p2.example;lr>"])
    }

    @Test func aTargetRefreshRequestMovesTheTargetAndABYEDoesNot() {
        // §12.2.2: "When a UAS receives a target refresh request, it MUST replace the dialog's
        // remote target URI with the URI from the Contact header field in that request".
        var dialog = Dialog(answering: Self.invite(), localTag: "ours")
        var reinvite = SIPMessage.request("INVITE", uri: "sip:netres@198.18.0.1")
        reinvite.headers.add("Contact", "<sip:alice@198.18.0.99:5070>")
        let accepted8 = dialog.accept(request: reinvite, cseq: 8)
        #expect(accepted8)
        #expect(dialog.remoteTarget == "sip:alice@198.18.0.99:5070")
        var update = SIPMessage.request("UPDATE", uri: "sip:netres@198.18.0.1")
        update.headers.add("Contact", "<sip:alice@198.18.0.98:5070>")
        let accepted9 = dialog.accept(request: update, cseq: 9)
        #expect(accepted9)
        #expect(dialog.remoteTarget == "sip:alice@198.18.0.98:5070")
        var bye = SIPMessage.request("BYE", uri: "sip:netres@198.18.0.1")
        bye.headers.add("Contact", "<sip:elsewhere@198.18.0.97>")
        let accepted10 = dialog.accept(request: bye, cseq: 10)
        #expect(accepted10)
        #expect(dialog.remoteTarget == "sip:alice@198.18.0.98:5070", "BYE refreshes no target")
        // §12.2.2: a lower CSeq "is out of order and MUST be rejected with a 500"; the agent
        // asks before it answers anything.
        #expect(!dialog.isInOrder(9) && dialog.isInOrder(10) && dialog.isInOrder(11))
        #expect(Dialog(callID: "c", localTag: "l").isInOrder(1), "no remote CSeq yet: anything is in order")
    }

    @Test func inDialogRequestsFollowLooseAndStrictRoutingRules() {
        // §12.2.1.1: "If the route set is empty, the UAC MUST place the remote target URI into
        // the Request-URI. The UAC MUST NOT add a Route header field to the request."
        let none = Dialog.routing(remoteTarget: "sip:bob@198.18.0.20", routeSet: [])
        #expect(none.requestURI == "sip:bob@198.18.0.20" && none.routes.isEmpty)
        // "... and the first URI in the route set contains the lr parameter ... the UAC MUST
        // place the remote target URI into the Request-URI and MUST include a Route header
        // field containing the route set values in order".
        let loose = Dialog.routing(remoteTarget: "sip:bob@198.18.0.20", routeSet: ["<sip:p1;lr>", "<sip:p2>"])
        #expect(loose.requestURI == "sip:bob@198.18.0.20" && loose.routes == ["<sip:p1;lr>", "<sip:p2>"])
        // "... does not contain the lr parameter, the UAC MUST place the first URI from the route
        // set into the Request-URI ... The UAC MUST then place the remote target URI into the
        // Route header field as the last value."
        let strict = Dialog.routing(remoteTarget: "sip:bob@198.18.0.20", routeSet: ["<sip:p1>", "<sip:p2;lr>"])
        #expect(strict.requestURI == "sip:p1" && strict.routes == ["<sip:p2;lr>", "<sip:bob@198.18.0.20>"])
    }
}
