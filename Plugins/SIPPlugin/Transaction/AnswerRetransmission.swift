/// The UAS core's retransmission of its 2xx to an INVITE until the ACK arrives (RFC 3261
/// §13.3.1.4; RFC 6026 leaves it to the TU while the server transaction sits in Accepted), as a
/// value: time passed in, actions out. The call layer passes each resend through the INVITE
/// server transaction (``ServerTransaction/respond(_:at:)``), which lets 2xx through in Accepted.
///
/// Invariants: the 2xx is resent at T1, then at intervals doubling up to T2, over any transport
/// (the ACK is end to end: a hop further on may be UDP); the first ``ackReceived()`` stops
/// everything; without an ACK, ``Action/ackTimedOut`` is produced once at 64×T1 (the dialog is
/// confirmed but the session SHOULD be ended with BYE) and nothing after it.
struct AnswerRetransmission: Hashable, Sendable {
    enum Timer: Hashable, Sendable {
        /// Resend the 2xx.
        case resend
        /// Give up waiting for the ACK, 64×T1.
        case giveUp
    }

    enum Action: Hashable, Sendable {
        case resend
        case arm(Timer, at: ContinuousClock.Instant)
        case ackTimedOut
    }

    /// Whether the 2xx is still waiting for its ACK.
    private(set) var waiting = true
    private var retransmit: RetransmitInterval
    let timers: SIPTimers

    init(timers: SIPTimers) {
        self.timers = timers
        retransmit = RetransmitInterval(timers, capped: true)
    }

    /// The 2xx was sent for the first time.
    func start(at now: ContinuousClock.Instant) -> [Action] {
        [.arm(.resend, at: now + retransmit.current), .arm(.giveUp, at: now + timers.transactionTimeout)]
    }

    mutating func timerFired(_ timer: Timer, at now: ContinuousClock.Instant) -> [Action] {
        guard waiting else { return [] }
        switch timer {
        case .resend: return [.resend, .arm(.resend, at: now + retransmit.doubled())]
        case .giveUp:
            waiting = false
            return [.ackTimedOut]
        }
    }

    /// The ACK for this 2xx arrived (matched by the dialog: Call-ID, tags and CSeq number).
    mutating func ackReceived() { waiting = false }
}
