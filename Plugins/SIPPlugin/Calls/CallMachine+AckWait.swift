/// RFC 3261 §13.3.1.4 as part of the call's value: "The 2xx response is passed to the transport
/// with an interval that starts at T1 seconds and doubles for each retransmission until it
/// reaches T2 seconds ... The server retransmits the 2xx response until it receives an ACK";
/// "If the server retransmits the 2xx response for 64*T1 seconds without receiving an ACK, the
/// dialog is confirmed, but the session SHOULD be terminated."
///
/// Invariants: at most one 2xx waits per call (a newer one, to a later re-INVITE, replaces the
/// wait); only an ACK with the waiting 2xx's CSeq number stops it; after the ACK or the give-up
/// no timer of the wait is left armed and no resend is asked for.
struct AckWait: Hashable, Sendable {
    /// The CSeq number of the INVITE our 2xx answers (its ACK carries the same number).
    let cseq: UInt32
    var retransmission: AnswerRetransmission
}

extension CallMachine {
    /// The ACK wait's inputs: ``CallInput/answerSent(cseq:timers:)``,
    /// ``CallInput/ackArrived(cseq:)`` and the firing of ``CallTimer/answerResend`` or
    /// ``CallTimer/ackWait``.
    mutating func handleAckWait(_ input: CallInput, at now: ContinuousClock.Instant) -> [CallAction] {
        switch input {
        case .answerSent(let cseq, let timers):
            guard phase != .ended else { return [] }
            let wait = AckWait(cseq: cseq, retransmission: AnswerRetransmission(timers: timers))
            ackWait = wait
            return translate(wait.retransmission.start(at: now))
        case .ackArrived(let cseq):
            guard ackWait?.cseq == cseq else { return [] }
            ackWait = nil
            return [.disarm(.answerResend), .disarm(.ackWait)]
        case .timerFired(.answerResend): return retransmissionTimerFired(.resend, at: now)
        case .timerFired(.ackWait): return retransmissionTimerFired(.giveUp, at: now)
        default: return []
        }
    }

    private mutating func retransmissionTimerFired(
        _ timer: AnswerRetransmission.Timer, at now: ContinuousClock.Instant
    ) -> [CallAction] {
        guard var wait = ackWait else { return [] }
        let actions = wait.retransmission.timerFired(timer, at: now)
        ackWait = wait.retransmission.waiting ? wait : nil
        return translate(actions)
    }

    /// The retransmission's actions as the call's.
    private mutating func translate(_ actions: [AnswerRetransmission.Action]) -> [CallAction] {
        actions.flatMap { action -> [CallAction] in
            switch action {
            case .resend: [.retransmitAnswer]
            case .arm(.resend, let at): [.arm(.answerResend, at: at)]
            case .arm(.giveUp, let at): [.arm(.ackWait, at: at)]
            case .ackTimedOut:
                [.note(.ackTimedOut), .disarm(.answerResend)] + finish(trigger: "timeout", reason: "no ACK")
            }
        }
    }
}
