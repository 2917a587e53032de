internal import Logging
internal import ResilienceCore

/// An outgoing call hung up while ringing out, whose INVITE transaction still runs: the CANCEL
/// waits for a provisional response (RFC 3261 §9.1 forbids it before one), and a 2xx that
/// crosses the CANCEL is ACKed and ended with BYE (§15: the dialog it made must not linger).
///
/// Invariant: `sent` turns true once and the CANCEL goes out exactly then (``CallTable``).
struct PendingCancel {
    let invite: SIPMessage
    /// Weak: the INVITE's transaction (``SIPUserAgent/runInvite(_:call:over:)``) holds its flow
    /// as long as the entry lives; a flow gone meanwhile has nothing to CANCEL over.
    weak var flow: SIPTransport?
    var sent: Bool
}

extension SIPUserAgent {
    /// Hangs up an outgoing call that has no answer yet: reported ended at once (reason
    /// `CANCEL`, or `reason`: `replaced` when an incoming `Replaces` took its place); the CANCEL goes now when a provisional arrived, else with the first one.
    func hangUpRingingOut(_ id: CallID, call: SIPCall, flow: SIPTransport, reason: String = "CANCEL") async throws {
        end(id, trigger: reason == "CANCEL" ? "api" : "remote", reason: reason)
        guard let invite = call.outgoingInvite else { return }
        calls.hungUpRinging(id, PendingCancel(invite: invite, flow: flow, sent: call.heardProvisional))
        if call.heardProvisional { try await sendCancel(of: invite, over: flow) }
    }

    /// The INVITE of `id` heard its first provisional: a CANCEL that waited for it goes now.
    func provisionalArrived(_ id: CallID) {
        calls[id]?.heardProvisional = true
        guard let pending = calls.cancelDue(id), let flow = pending.flow else { return }
        Task { try? await self.sendCancel(of: pending.invite, over: flow) }
    }

    /// CANCEL for an INVITE still without a final response (§9.1): the INVITE's Request-URI,
    /// top Via (same branch), Route, From, To and Call-ID, its CSeq number with method CANCEL.
    func sendCancel(of invite: SIPMessage, over flow: SIPTransport) async throws {
        var cancel = SIPMessage.request("CANCEL", uri: invite.requestURI ?? "")
        if let via = invite.headers["Via"] { cancel.headers.add("Via", via) }
        for name in ["Max-Forwards", "From", "To", "Call-ID"] {
            if let value = invite.headers[name] { cancel.headers.add(name, value) }
        }
        for route in invite.headers.values("Route") { cancel.headers.add("Route", route) }
        cancel.headers.add("CSeq", "\(invite.cseq?.number ?? 1) CANCEL")
        // §9.1: the CANCEL goes where its INVITE went (a re-INVITE of a dialog with no route set:
        // the remote target).
        let carrier = await dialogTransport(for: invite, over: flow)
        do {
            _ = try await runNonInviteTransaction(cancel, over: carrier, table: table, timers: timers, clock: clock)
        } catch {
            throw PluginError(
                "no answer to the CANCEL of \(invite.headers["Call-ID"].map { LogText.escaped($0, limit: 64) } ?? "?")")
        }
    }

    /// A 2xx to an INVITE we had CANCELled (it crossed the CANCEL): the ACK went already; one
    /// BYE ends the dialog it made (to its Contact, through its Record-Route), best effort.
    func byeAfterCancel(invite: SIPMessage, answer: SIPMessage, over flow: SIPTransport) async {
        let (routeSet, target) = Self.routeFromAnswer(answer)
        let (uri, routes) = Dialog.routing(remoteTarget: target ?? invite.requestURI ?? "", routeSet: routeSet)
        var bye = SIPMessage.request("BYE", uri: uri)
        for route in routes { bye.headers.add("Route", route) }
        for name in ["From", "Call-ID"] { if let value = invite.headers[name] { bye.headers.add(name, value) } }
        if let to = answer.headers["To"] { bye.headers.add("To", to) }
        bye.headers.add("CSeq", "0 BYE")
        var cseq = invite.cseq?.number ?? 1
        logger.notice("sip.call-answered-after-cancel", metadata: ["status": "\(answer.status ?? 0)"])
        _ = try? await exchange(bye, uri: uri, over: flow) {
            cseq &+= 1
            return cseq
        }
    }
}
