internal import Logging
internal import ResilienceCore

/// Our own UPDATE (RFC 3311): a new offer and a new Contact (a target refresh, §5.1) in a
/// confirmed dialog, without an INVITE transaction and its ACK.
///
/// Choice: a recovery after a loss or change (`reinvite-call`) uses UPDATE when the far end
/// listed it in the `Allow` of its last INVITE or 2xx, and a re-INVITE otherwise; holds and
/// resumes always re-INVITE (every peer supports it, and an app reads a hold as a re-INVITE).
/// Only one offer/answer runs per dialog: an UPDATE takes the same slot as a re-INVITE
/// (``CallMachine/offerSlot``), and the far end's offer meanwhile is answered 491.
extension SIPUserAgent {
    /// Sends an UPDATE with an offer and takes in the answer: 491 retried after ``GlareWait``
    /// (bounded), 481/408 end the call (reported lost, no BYE), any other failure keeps the old
    /// session (the offer is rolled back, RFC 6141).
    func sendUpdate(_ id: CallID, over flow: SIPTransport, hold: Bool, recovery: CallRecovery?) async throws {
        try takeOfferSlot(id, method: "UPDATE")
        defer { withdrawOffer(id) }
        var generator = SystemRandomNumberGenerator()
        for glareRetries in 0...GlareWait.maximumRetries {
            let (call, offer) = try await makeOffer(id, over: flow, hold: hold)
            var update = inDialogRequest("UPDATE", call: call, flow: flow)
            update.headers.add("Allow", Self.allowedMethods)
            update.headers.add("Content-Type", "application/sdp")
            update.body = Array(offer.serialized().utf8)
            if glareRetries > 0 { try Task.checkCancellation() }
            let sentAt = clock.now
            let offered = SentOffer(flow: flow, hold: hold, sentAt: sentAt)
            calls[id]?.offerInFlight = offered
            let response: SIPMessage
            do {
                // Its own task: once sent, the UPDATE's answer is taken in even when the executor
                // cancels this action meanwhile (the far end applied our offer).
                response = try await Task { [update] in
                    try await self.exchange(
                        update, uri: update.requestURI ?? call.peer, over: flow,
                        nextCSeq: { self.nextCSeq(in: call.dialogID) },
                        sending: { self.calls[id]?.outgoingUpdate = $0 })
                }.value
                calls[id]?.offerInFlight = nil
                calls[id]?.outgoingUpdate = nil
            } catch {
                calls[id]?.offerInFlight = nil
                calls[id]?.outgoingUpdate = nil
                calls[id]?.offerAnswer.rollback()
                throw error
            }
            let status = response.status ?? 0
            if (200..<300).contains(status) {
                let now = clock.now
                let event = CallEvent(
                    call: id, phase: .active, trigger: recovery == nil ? "remote" : "network", peer: call.peer,
                    glareRetries: glareRetries, direction: call.isOutgoing ? .outgoing : .incoming,
                    downtime: recovery?.downtime, reinviteRoundTrip: now - sentAt,
                    recoveryTime: recovery.map { now - $0.since })
                if await answered(id, response: response, reporting: event), recovery != nil {
                    calls[id]?.lastRecovery = offered
                }
                return
            }
            calls[id]?.offerAnswer.rollback()
            switch status {
            case 491 where glareRetries < GlareWait.maximumRetries:
                let wait = GlareWait.duration(ownsCallID: call.isOutgoing, using: &generator)
                logger.notice("sip.call-glare", metadata: ["call": "\(id)", "wait": "\(wait)", "method": "UPDATE"])
                try await waitOutGlare(id, method: "UPDATE", wait: wait)
            case 481, 408:
                end(id, trigger: "remote", reason: "\(status)")
                throw Self.failure(response, "UPDATE")
            default:
                throw Self.failure(response, "UPDATE")
            }
        }
        throw PluginError("UPDATE of call \(id): glare after \(GlareWait.maximumRetries) retries")
    }

    /// The dialog's next CSeq, taken from the table (so no other request reuses it).
    func nextCSeq(in dialogID: Dialog.ID) -> UInt32 {
        dialogs.modify(dialogID) { _ = $0.nextLocalCSeq() }.flatMap { dialogs[$0]?.localCSeq } ?? 1
    }
}
