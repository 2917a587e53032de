internal import Synchronization

/// The call layer's side of an INVITE client transaction: it reads the transaction's events,
/// ACKs every 2xx end to end (RFC 3261 §13.2.2.4) and hears the provisional that lets a
/// waiting CANCEL go.
extension SIPUserAgent {
    /// Runs one INVITE client transaction and returns its final response (nil: none came).
    /// A 2xx is ACKed at once; the transaction keeps running in the background for timer M,
    /// and every retransmitted 2xx is ACKed again.
    func runInvite(_ invite: SIPMessage, call id: CallID, over flow: SIPTransport) async -> SIPMessage? {
        let (events, sink) = AsyncStream.makeStream(of: InviteClientEvent.self)
        let (table, timers, clock) = (self.table, self.timers, self.clock)
        Task {
            await runInviteTransaction(invite, over: flow, table: table, timers: timers, clock: clock, events: sink)
        }
        var iterator = events.makeAsyncIterator()
        defer { calls.inviteFinished(id) }
        while let event = await iterator.next() {
            switch event {
            case .provisional(let response):
                let early = CallInput.provisional(
                    toTag: response.tag(in: "To"), supportsReplaces: response.offersReplaces)
                _ = calls[id]?.machine.handle(early, at: clock.now)
                provisionalArrived(id)
                if response.status != 100, calls[id]?.phase == .progressing { report(id, trigger: "remote", "ringing") }
            case .answered(let response):
                let ack = ackFor(invite, response: response, call: id, flow: flow)
                // To the 2xx's Contact when it has no Record-Route (§12.2.1.1), else via the flow.
                let ackCarrier = await dialogTransport(for: ack, over: flow)
                try? await ackCarrier.send(ack)
                Task {
                    while let later = await iterator.next() {
                        if case .answeredAgain = later { try? await ackCarrier.send(ack) }
                    }
                }
                if calls[id] == nil, calls.isCancelling(id) {
                    Task { await self.byeAfterCancel(invite: invite, answer: response, over: flow) }
                }
                return response
            case .rejected(let response): return response
            case .answeredAgain: break
            case .failed: return nil
            }
        }
        return nil
    }

    /// Runs our INVITE of call `id` to its final response and settles the offer: a 2xx is ACKed
    /// (``runInvite(_:call:over:)``), its answer taken in and reported with `event` (given the
    /// instant of the answer), and a `recovery`'s offer becomes the call's last recovery; no
    /// answer or a non-2xx rolls the offer back. Callers run it in a task of its own, so it ends
    /// the same way whatever happens to theirs. Returns the final response (nil: none came).
    func settleInvite(
        _ invite: SIPMessage, call id: CallID, over flow: SIPTransport, recovery: Bool,
        reporting event: @Sendable (ContinuousClock.Instant) -> CallEvent
    ) async -> SIPMessage? {
        let final = await runInvite(invite, call: id, over: flow)
        calls[id]?.outgoingInvite = nil
        let offer = calls[id]?.offerInFlight
        calls[id]?.offerInFlight = nil
        guard let final, (200..<300).contains(final.status ?? 0) else {
            calls[id]?.offerAnswer.rollback()
            return final
        }
        if await answered(id, response: final, reporting: event(clock.now)), recovery {
            calls[id]?.lastRecovery = offer
        }
        return final
    }

    /// The ACK for a 2xx to `invite`: to the confirmed dialog's target and route set, or (a
    /// first 2xx, or one to a call hung up meanwhile) to the response's Contact and Record-Route.
    func ackFor(_ invite: SIPMessage, response: SIPMessage, call id: CallID, flow: SIPTransport) -> SIPMessage {
        var (routeSet, target) = Self.routeFromAnswer(response)
        if let call = calls[id], call.dialogID.remoteTag != nil, let dialog = dialogs[call.dialogID] {
            (routeSet, target) = (dialog.routeSet, dialog.remoteTarget)
        }
        return SIPMessage.ackFor2xx(
            invite: invite, response: response, routeSet: routeSet,
            remoteTarget: target ?? invite.requestURI ?? calls[id]?.peer ?? "",
            via: flow.newVia())
    }

    /// The route set (Record-Route reversed) and remote target (Contact) a 2xx gives its UAC (§12.1.2).
    static func routeFromAnswer(_ response: SIPMessage) -> (routeSet: [String], target: String?) {
        (
            response.headers.listValues("Record-Route").reversed(),
            response.headers.listValues("Contact").first.map(extractURI)
        )
    }
}
