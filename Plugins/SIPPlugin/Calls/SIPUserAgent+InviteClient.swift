/// The call layer's side of an INVITE client transaction: it reads the transaction's events,
/// ACKs every 2xx end to end (RFC 3261 §13.2.2.4), hands the call its provisionals, and lets
/// the CANCEL of a call hung up meanwhile go with the first one.
extension SIPUserAgent {
    /// Runs one INVITE client transaction (the attempt of exchange `exchange` of call `id`) and
    /// returns its final response (nil: none came). Provisionals reach the call as they come.
    /// A 2xx is ACKed at once; the transaction keeps running in the background for timer M,
    /// and every retransmitted 2xx is ACKed again.
    func runInvite(
        _ invite: SIPMessage, call id: CallID, exchange: ExchangeID, attempt: Int, over flow: SIPTransport
    ) async -> SIPMessage? {
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
                let heard = CallInput.provisional(
                    exchange, attempt: attempt, status: response.status ?? 100, toTag: response.tag(in: "To"),
                    supportsReplaces: response.offersReplaces)
                await feed(id, heard)
                cancelIfHungUp(id)
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

    /// The ACK for a 2xx to `invite`: to the confirmed dialog's target and route set, or (a
    /// first 2xx, or one to a call hung up meanwhile) to the response's Contact and Record-Route.
    func ackFor(_ invite: SIPMessage, response: SIPMessage, call id: CallID, flow: SIPTransport) -> SIPMessage {
        var (routeSet, target) = response.routeFromAnswer
        if let call = calls[id], call.dialogID.remoteTag != nil, let dialog = dialogs[call.dialogID] {
            (routeSet, target) = (dialog.routeSet, dialog.remoteTarget)
        }
        return SIPMessage.ackFor2xx(
            invite: invite, response: response, routeSet: routeSet,
            remoteTarget: target ?? invite.requestURI ?? calls[id]?.peer ?? "",
            via: flow.newVia())
    }
}
