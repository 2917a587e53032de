internal import Logging
internal import ResilienceCore

/// An incoming INVITE with `Replaces` (RFC 3891 §3): the rules are the pure
/// ``IncomingReplaces``; here the new call takes the old one's place.
///
/// A `Replaces` that names one of our confirmed dialogs, or the early dialog of our own ringing
/// INVITE, is answered at once with the old call's media session (the new dialog takes over its
/// resources; knowing the Call-ID and both random tags is what entitles the sender, §8), the
/// new call is reported `alerting` then `active`, and the old one ends (reason `replaced`): BYE
/// for a confirmed dialog, CANCEL for our ringing INVITE (its `placeCall` then throws with
/// the 487). Refusals (400, 481, 486) leave every call as it was.
extension SIPUserAgent {
    /// Our calls as the `Replaces` rules see them.
    var replaceableCalls: [ReplaceableCall] {
        calls.all.values.map { call in
            let confirmed = call.machine.isEstablished
            return ReplaceableCall(
                id: call.id, callID: call.dialogID.callID, localTag: call.dialogID.localTag,
                remoteTag: call.dialogID.remoteTag ?? (call.isOutgoing ? call.machine.early.remoteTag : nil),
                weInitiated: call.isOutgoing, isConfirmed: confirmed)
        }
    }

    /// Call `new` (ringing, its INVITE carried `Replaces`) replaces call `old`.
    func replace(_ old: CallID, with new: CallID, confirmed: Bool) async {
        guard let previous = calls[old], let flow = transport else { return }
        logger.info("sip.call-replaced", metadata: ["call": "\(old)", "by": "\(new)"])
        // The old call's media goes to the new one; the old call closes a placeholder instead.
        calls[old]?.media = RTPEchoSession(clock: clock)
        do {
            try await answer(new, media: previous.media, over: flow)
        } catch {
            logger.notice(
                "sip.call-replace-failed", metadata: ["call": "\(new)", "error": "\(LogText.escaped("\(error)"))"])
            calls[old]?.media = previous.media
            return
        }
        guard calls[old] != nil else { return }
        if confirmed {
            try? await bye(old, over: flow, trigger: "remote", reason: "replaced")
        } else {
            try? await hangUpRingingOut(old, flow: flow, reason: "replaced")
        }
    }
}
