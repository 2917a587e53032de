internal import Logging
internal import ResilienceCore

/// Hanging up a call still ringing out: the CANCEL waits for a provisional (RFC 3261 §9.1 forbids
/// it before one), and a 2xx that crosses it is ACKed and ended with BYE (§15: the dialog it made
/// must not linger).
extension SIPUserAgent {
    /// Hangs up an outgoing call that has no answer yet: reported ended at once (reason
    /// `CANCEL`, or `reason`: `replaced` when an incoming `Replaces` took its place); the CANCEL
    /// goes now when a provisional arrived, else with the first one.
    func hangUpRingingOut(_ id: CallID, flow: SIPTransport, reason: String = "CANCEL") async throws {
        guard let call = calls[id] else { return }
        await feed(id, .terminate(trigger: reason == "CANCEL" ? "api" : "remote", reason: reason, downtime: nil))
        guard let outgoing = call.outgoing, !outgoing.settled, outgoing.request.method == "INVITE" else { return }
        let heard = call.machine.early.heardProvisional
        calls.hungUpRinging(id, PendingCancel(invite: outgoing.request, flow: flow, sent: heard))
        if heard { try await sendCancel(of: outgoing.request, over: flow) }
    }

    /// A provisional arrived for the INVITE of `id`: the CANCEL of a call hung up while it
    /// waited for one goes now (once).
    func cancelIfHungUp(_ id: CallID) {
        guard let pending = calls.cancelDue(id), let flow = pending.flow else { return }
        Task { try? await self.sendCancel(of: pending.invite, over: flow) }
    }

    /// CANCELs an INVITE still without a final response (``SIPMessage/cancel(of:)``).
    func sendCancel(of invite: SIPMessage, over flow: SIPTransport) async throws {
        let cancel = SIPMessage.cancel(of: invite)
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
        let bye = SIPMessage.byeAfterCancel(invite: invite, answer: answer)
        var cseq = invite.cseq?.number ?? 1
        logger.notice("sip.call-answered-after-cancel", metadata: ["status": "\(answer.status ?? 0)"])
        _ = try? await exchange(bye, uri: bye.requestURI ?? "", over: flow) {
            cseq &+= 1
            return cseq
        }
    }
}
