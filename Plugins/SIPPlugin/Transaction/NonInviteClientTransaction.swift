/// A non-INVITE client transaction (RFC 3261 §17.1.2) as a value: events in, actions out,
/// time passed in. The driver (`runNonInviteTransaction`) sends, arms timers on the lent clock
/// and feeds back what arrives; nothing here reads a clock or touches a socket.
///
/// Invariants: the request is sent once at ``start(at:)`` and again only when timer E fires
/// (never on a reliable transport, where E is not armed); E's interval doubles from T1 up to
/// T2, and is T2 once a provisional response arrived; exactly one of ``Action/complete(_:)``
/// (the first final response) or ``Action/fail(_:)`` (timer F at 64×T1, or the flow closed) is
/// produced, after which every event yields nothing. Timer K (absorbing retransmitted final
/// responses for T4 over UDP) is kept by the ``TransactionTable``.
struct NonInviteClientTransaction {
    enum Timer: Hashable, Sendable {
        /// Retransmission (unreliable transports only).
        case e
        /// Transaction timeout, 64×T1.
        case f
    }

    enum State: Hashable, Sendable {
        case trying
        case proceeding
        case completed
        case terminated
    }

    enum Action: Hashable, Sendable {
        /// Send (or resend) the request.
        case send
        case arm(Timer, at: ContinuousClock.Instant)
        /// The final response: hand it to the transaction user.
        case complete(SIPMessage)
        case fail(TransactionFailure)
    }

    private(set) var state = State.trying
    /// Timer E: T1 doubling up to T2.
    private var retransmit: RetransmitInterval
    let reliable: Bool
    let timers: SIPTimers

    init(reliable: Bool, timers: SIPTimers) {
        self.reliable = reliable
        self.timers = timers
        self.retransmit = RetransmitInterval(timers, capped: true)
    }

    mutating func start(at now: ContinuousClock.Instant) -> [Action] {
        let timeout = Action.arm(.f, at: now + timers.transactionTimeout)
        return reliable ? [.send, timeout] : [.send, .arm(.e, at: now + retransmit.current), timeout]
    }

    mutating func timerFired(_ timer: Timer, at now: ContinuousClock.Instant) -> [Action] {
        guard state == .trying || state == .proceeding else { return [] }
        switch timer {
        case .e:
            let interval = state == .proceeding ? retransmit.capped() : retransmit.doubled()
            return [.send, .arm(.e, at: now + interval)]
        case .f:
            state = .terminated
            return [.fail(.timeout)]
        }
    }

    mutating func received(_ response: SIPMessage) -> [Action] {
        guard state == .trying || state == .proceeding, let status = response.status else { return [] }
        guard status >= 200 else {
            state = .proceeding
            return []
        }
        state = .completed
        return [.complete(response)]
    }

    mutating func flowClosed() -> [Action] {
        guard state == .trying || state == .proceeding else { return [] }
        state = .terminated
        return [.fail(.flowClosed)]
    }
}

/// Why a transaction produced no final response.
enum TransactionFailure: Error, Hashable, Sendable {
    case timeout
    case flowClosed
}
