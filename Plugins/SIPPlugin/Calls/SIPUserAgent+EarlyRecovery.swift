internal import Logging
internal import ResilienceCore

/// An outgoing call still ringing when the address changes: the policy's `reinvite-call` hands
/// it the new path's flow, and the call machine rings the far end again from there (a CANCEL
/// and a fresh INVITE, or an INVITE with `Replaces`; see the machine's early recovery). The app
/// keeps one ``CallID`` throughout and sees the call as `progressing` with trigger `network`.
extension SIPUserAgent {
    /// Hands a ringing outgoing call the flow of the new path (`reinvite-call` on a call that is
    /// not yet answered). Nothing to do while its INVITE is out on that flow's address.
    func recoverEarly(_ id: CallID, path: NetworkPath) async throws {
        guard let call = calls[id], call.isOutgoing, call.dialogID.remoteTag == nil else {
            throw PluginError.permanent("no outgoing call \(id) ringing")
        }
        let flow = try await flow(for: path)
        if let sent = call.outgoing, !sent.settled, sent.request.headers["Via"]?.contains(" \(flow.sentBy);") == true {
            return
        }
        logger.notice("sip.call-early-recovery", metadata: ["call": "\(id)", "address": "\(flow.localHost)"])
        let number = calls.number(of: flow)
        calls[id]?.flows[number] = flow
        await feed(id, .newFlow(number))
    }
}
