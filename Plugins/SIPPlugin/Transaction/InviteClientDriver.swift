internal import ResilienceCore

/// What the transaction user of an INVITE client transaction hears, in order.
enum InviteClientEvent: Hashable, Sendable {
    /// 101–199 (ringing, session progress), and a 100 Trying when it is the first provisional
    /// (later ones stay in the transaction): from the first, the TU may CANCEL (§9.1).
    case provisional(SIPMessage)
    /// The first 2xx: confirm the dialog and send the ACK end to end
    /// (``SIPMessage/ackFor2xx(invite:response:routeSet:remoteTarget:via:)``).
    case answered(SIPMessage)
    /// A retransmitted or forked 2xx within timer M: send the ACK again.
    case answeredAgain(SIPMessage)
    /// The final non-2xx (already ACKed by the transaction).
    case rejected(SIPMessage)
    /// No final response: timer B, or the flow closed.
    case failed(TransactionFailure)
}

/// Runs one INVITE client transaction (``InviteClientTransaction``) over `transport` with its
/// timers on `clock`, and yields what the TU must hear to `events`.
///
/// Returns when the transaction terminates (timer B, D or M, or the flow closed) or the calling
/// task is cancelled; `events` is finished then. A final non-2xx is noted by `table` as it
/// arrives (``TransactionTable/refusal(for:)``), before its ACK goes. The TU runs
/// this in a child task and reads the stream: it may act on `answered` at once while this keeps
/// absorbing retransmitted 2xx.
func runInviteTransaction(
    _ invite: SIPMessage, over transport: SIPTransport, table: TransactionTable, timers: SIPTimers,
    clock: any RuntimeClock, events output: AsyncStream<InviteClientEvent>.Continuation
) async {
    guard let branch = invite.topViaBranch, invite.cseq?.method == "INVITE" else {
        preconditionFailure("INVITE without Via branch or INVITE CSeq")
    }
    let key = TransactionTable.Key(branch: branch, method: "INVITE")
    let (events, sink) = AsyncStream.makeStream(of: TransactionTable.Event.self)
    table.open(key, flow: transport.transactionFlow, sink: sink)
    defer {
        table.close(key, absorbUntil: clock.now)
        output.finish()
    }
    var machine = InviteClientTransaction(invite: invite, reliable: transport.kind != .udp, timers: timers)
    let bytes = invite.serialized()
    await withTaskGroup(of: Void.self) { group in
        defer { group.cancelAll() }
        var actions = machine.start(at: clock.now)
        var sent = 0
        var iterator = events.makeAsyncIterator()
        while true {
            for action in actions {
                switch action {
                case .sendInvite:
                    sent += 1
                    guard await transport.sendCopy(bytes, number: sent) else {
                        output.yield(.failed(.flowClosed))
                        return
                    }
                case .sendAck(let ack): try? await transport.send(ack)
                case .arm(let timer, let deadline): group.arm(.inviteTimer(timer), at: deadline, on: clock, to: sink)
                case .provisional(let response): output.yield(.provisional(response))
                case .answered(let response): output.yield(.answered(response))
                case .answeredAgain(let response): output.yield(.answeredAgain(response))
                case .rejected(let response): output.yield(.rejected(response))
                case .fail(let failure): output.yield(.failed(failure))
                case .terminated: return
                }
            }
            guard let event = await iterator.next() else { return }
            switch event {
            case .response(let response): actions = machine.received(response, at: clock.now)
            case .flowClosed: actions = machine.flowClosed()
            case .inviteTimer(let timer): actions = machine.timerFired(timer, at: clock.now)
            case .timer: actions = []
            }
        }
    }
}
