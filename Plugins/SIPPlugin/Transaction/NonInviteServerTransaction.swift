/// A non-INVITE server transaction (RFC 3261 §17.2.2) as a value: the request arrived, the
/// transaction user answers, retransmissions of the request are absorbed and answered again
/// from here. Time is passed in; nothing here reads a clock or touches a socket.
///
/// Invariants: the transaction user's request is delivered once (the table creates this value
/// on the first copy only); a retransmitted request is answered with the last response sent,
/// or absorbed silently while none was sent (Trying); at most one final response is sent;
/// timer J (64×T1 over UDP, zero over a reliable transport) ends the transaction after its
/// final response. An INVITE server transaction (§17.2.1) would sit beside this one with the
/// same shape.
struct NonInviteServerTransaction {
    enum State: Hashable, Sendable {
        case trying
        case proceeding
        /// Final response sent; absorbing retransmissions until timer J's deadline.
        case completed(until: ContinuousClock.Instant)
    }

    private(set) var state = State.trying
    /// The last response sent, answered again to each retransmitted request.
    private(set) var lastResponse: SIPMessage?
    /// Timer J's length.
    let timerJ: Duration

    init(reliable: Bool, timers: SIPTimers) {
        timerJ = reliable ? .zero : timers.transactionTimeout
    }

    /// A copy of the request arrived again: what to send back, if anything.
    func requestRetransmitted() -> SIPMessage? { lastResponse }

    /// The transaction user answers; true when `response` is to be sent (false after a final).
    mutating func respond(_ response: SIPMessage, at now: ContinuousClock.Instant) -> Bool {
        if case .completed = state { return false }
        lastResponse = response
        state = (response.status ?? 0) < 200 ? .proceeding : .completed(until: now + timerJ)
        return true
    }

    /// Whether timer J has fired by `now` (the transaction is over and may be forgotten).
    func isTerminated(at now: ContinuousClock.Instant) -> Bool {
        if case .completed(let until) = state { return now >= until }
        return false
    }
}
