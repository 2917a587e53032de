/// An INVITE server transaction (RFC 3261 §17.2.1 as amended by RFC 6026 §8.5–8.7) as a value:
/// events in, actions out, time passed in. ``ServerTransactionTable`` holds it, sends what it
/// says and runs its timers on the agent's lent clock.
///
/// Choice (§17.2.1 allows either): `100 Trying` is sent at once by ``start(at:)``, not after
/// 200 ms, so a peer's timer A stops as early as possible; it costs one small datagram per call.
///
/// Invariants:
/// - Proceeding: a retransmitted INVITE is answered with the last provisional sent; the TU may
///   send any number of provisionals and one final response.
/// - A non-2xx final moves to Completed: it is resent when timer G fires (T1 doubling to T2,
///   UDP only) and on each retransmitted INVITE, until the ACK (→ Confirmed, timer I = T4 over
///   UDP, zero over a stream) or timer H (64×T1, → ``Action/ackTimedOut``).
/// - A 2xx moves to Accepted (RFC 6026): the transaction never resends it on its own; the TU's
///   retransmissions of the 2xx pass through ``respond(_:at:)``; retransmitted INVITEs are
///   absorbed; timer L (64×T1) ends it. The ACK for a 2xx never matches this transaction.
/// - A CANCEL matching a Proceeding transaction answers the INVITE `487` (§9.2); in any other
///   state it changes nothing.
/// - After ``Action/terminated`` every event yields nothing.
struct InviteServerTransaction {
    enum Timer: Hashable, Sendable {
        /// Non-2xx final retransmission (UDP only).
        case g
        /// Wait for the ACK of a non-2xx final, 64×T1.
        case h
        /// Absorb retransmitted ACKs, T4 over UDP.
        case i
        /// Wait in Accepted for retransmitted INVITEs, 64×T1 (RFC 6026).
        case l
    }

    enum State: Hashable, Sendable {
        case proceeding
        case completed
        case confirmed
        case accepted
        case terminated
    }

    enum Action: Hashable, Sendable {
        case send(SIPMessage)
        case arm(Timer, at: ContinuousClock.Instant)
        /// Timer H fired: the peer never ACKed the non-2xx final (the TU is told, §17.2.1).
        case ackTimedOut
        /// The transaction is over and may be forgotten.
        case terminated
    }

    private(set) var state = State.proceeding
    /// The last response sent, resent on a retransmitted INVITE (Proceeding, Completed).
    private(set) var lastResponse: SIPMessage?
    /// Timer G: T1 doubling up to T2.
    private var retransmit: RetransmitInterval
    let invite: SIPMessage
    let reliable: Bool
    let timers: SIPTimers

    init(invite: SIPMessage, reliable: Bool, timers: SIPTimers) {
        (self.invite, self.reliable, self.timers) = (invite, reliable, timers)
        retransmit = RetransmitInterval(timers, capped: true)
    }

    var isTerminated: Bool { state == .terminated }

    /// The INVITE arrived (first copy): `100 Trying` at once.
    mutating func start(at now: ContinuousClock.Instant) -> [Action] {
        let trying = invite.makeResponse(status: 100, reason: "Trying")
        lastResponse = trying
        return [.send(trying)]
    }

    /// A copy of the INVITE arrived again.
    func requestRetransmitted() -> [Action] {
        switch state {
        case .proceeding, .completed: return lastResponse.map { [.send($0)] } ?? []
        default: return []
        }
    }

    /// The TU answers (or, in Accepted, retransmits its 2xx).
    mutating func respond(_ response: SIPMessage, at now: ContinuousClock.Instant) -> [Action] {
        guard let status = response.status else { return [] }
        switch (state, status) {
        case (.proceeding, 100..<200):
            lastResponse = response
            return [.send(response)]
        case (.proceeding, 200..<300):
            state = .accepted
            lastResponse = response
            return [.send(response), .arm(.l, at: now + timers.transactionTimeout)]
        case (.proceeding, 300...699):
            state = .completed
            lastResponse = response
            let wait = Action.arm(.h, at: now + timers.transactionTimeout)
            return reliable
                ? [.send(response), wait] : [.send(response), .arm(.g, at: now + retransmit.current), wait]
        case (.accepted, 200..<300):
            return [.send(response)]
        default:
            return []
        }
    }

    /// An ACK matching this transaction (hence for a non-2xx final) arrived.
    mutating func ackReceived(at now: ContinuousClock.Instant) -> [Action] {
        guard state == .completed else { return [] }
        state = .confirmed
        return [.arm(.i, at: now + (reliable ? .zero : timers.t4))]
    }

    /// The To tag of the last response sent, if it carried one (a 100 Trying does not).
    var toTag: String? {
        lastResponse?.tag(in: "To")
    }

    /// A matching CANCEL arrived (§9.2): a Proceeding INVITE is answered `487`, with the To tag
    /// its provisional responses carried, else `fallbackTag`.
    mutating func cancelled(fallbackTag: String, at now: ContinuousClock.Instant) -> [Action] {
        guard state == .proceeding else { return [] }
        let tag = toTag ?? fallbackTag
        return respond(invite.makeResponse(status: 487, reason: "Request Terminated", toTag: tag), at: now)
    }

    mutating func timerFired(_ timer: Timer, at now: ContinuousClock.Instant) -> [Action] {
        switch (timer, state) {
        case (.g, .completed):
            return (lastResponse.map { [Action.send($0)] } ?? []) + [.arm(.g, at: now + retransmit.doubled())]
        case (.h, .completed):
            state = .terminated
            return [.ackTimedOut, .terminated]
        case (.i, .confirmed), (.l, .accepted):
            state = .terminated
            return [.terminated]
        default:
            return []
        }
    }
}
