/// An INVITE client transaction (RFC 3261 §17.1.1 as amended by RFC 6026 §8.4) as a value:
/// events in, actions out, time passed in. The driver sends, arms timers on the lent clock and
/// feeds back what arrives; nothing here reads a clock or touches a socket.
///
/// Invariants:
/// - The INVITE is sent once at ``start(at:)`` and again only when timer A fires, which happens
///   only in Calling over an unreliable transport; A's interval doubles from T1 without a cap.
/// - Timer B (64×T1) ends the transaction with ``Action/fail(_:)`` only while still Calling;
///   a provisional response moves it to Proceeding, where it waits for the TU (CANCEL) instead.
///   Every provisional but 100 is passed up; a 100 only when it is the first (the TU may send
///   a CANCEL only after a provisional, RFC 3261 §9.1).
/// - A final non-2xx response is passed up once (``Action/rejected(_:)``) and ACKed from here
///   (same branch, To tag from the response); each retransmission of it is ACKed again and not
///   passed up; timer D (64×T1 over UDP, zero over a stream) ends the Completed state.
/// - A 2xx is passed up (``Action/answered(_:)``) and the transaction waits in Accepted for
///   timer M (64×T1); each further 2xx is passed up as ``Action/answeredAgain(_:)`` so the TU
///   resends its end-to-end ACK (built with ``SIPMessage/ackFor2xx(invite:response:routeSet:remoteTarget:via:)``).
///   The transaction never ACKs a 2xx itself.
/// - Exactly one of `answered`, `rejected` or `fail` is produced; after `terminated` every
///   event yields nothing.
struct InviteClientTransaction {
    enum Timer: Hashable, Sendable {
        /// INVITE retransmission (unreliable transports only).
        case a
        /// Transaction timeout while Calling, 64×T1.
        case b
        /// Wait for retransmitted non-2xx finals, 64×T1 over UDP.
        case d
        /// Wait for retransmitted 2xx (RFC 6026), 64×T1.
        case m
    }

    enum State: Hashable, Sendable {
        case calling
        case proceeding
        /// A non-2xx final was received and ACKed.
        case completed
        /// A 2xx was received (RFC 6026).
        case accepted
        case terminated
    }

    enum Action: Hashable, Sendable {
        /// Send (or resend) the INVITE.
        case sendInvite
        /// Send this ACK (for a non-2xx final).
        case sendAck(SIPMessage)
        case arm(Timer, at: ContinuousClock.Instant)
        /// A provisional response for the TU (ringing, session progress).
        case provisional(SIPMessage)
        /// The first 2xx: the TU confirms its dialog and sends the ACK end to end.
        case answered(SIPMessage)
        /// A retransmitted (or forked) 2xx in Accepted: the TU resends its ACK.
        case answeredAgain(SIPMessage)
        /// The final non-2xx response.
        case rejected(SIPMessage)
        case fail(TransactionFailure)
        /// The transaction is over and may be forgotten.
        case terminated
    }

    private(set) var state = State.calling
    /// Timer A: T1 doubling without a cap.
    private var retransmit: RetransmitInterval
    let invite: SIPMessage
    let reliable: Bool
    let timers: SIPTimers

    init(invite: SIPMessage, reliable: Bool, timers: SIPTimers) {
        (self.invite, self.reliable, self.timers) = (invite, reliable, timers)
        retransmit = RetransmitInterval(timers, capped: false)
    }

    mutating func start(at now: ContinuousClock.Instant) -> [Action] {
        let timeout = Action.arm(.b, at: now + timers.transactionTimeout)
        return reliable ? [.sendInvite, timeout] : [.sendInvite, .arm(.a, at: now + retransmit.current), timeout]
    }

    mutating func timerFired(_ timer: Timer, at now: ContinuousClock.Instant) -> [Action] {
        switch (timer, state) {
        case (.a, .calling):
            return [.sendInvite, .arm(.a, at: now + retransmit.doubled())]
        case (.b, .calling):
            state = .terminated
            return [.fail(.timeout), .terminated]
        case (.d, .completed), (.m, .accepted):
            state = .terminated
            return [.terminated]
        default:
            return []
        }
    }

    mutating func received(_ response: SIPMessage, at now: ContinuousClock.Instant) -> [Action] {
        guard let status = response.status, (100...699).contains(status) else { return [] }
        switch (state, status) {
        case (.calling, 100..<200), (.proceeding, 100..<200):
            // The first provisional goes up even when it is a 100: from then on the TU may
            // CANCEL (§9.1). A later 100 adds nothing.
            let first = state == .calling
            state = .proceeding
            return status == 100 && !first ? [] : [.provisional(response)]
        case (.calling, 200..<300), (.proceeding, 200..<300):
            state = .accepted
            return [.answered(response), .arm(.m, at: now + timers.transactionTimeout)]
        case (.calling, _), (.proceeding, _):
            guard status >= 300 else { return [] }
            state = .completed
            let wait = reliable ? Duration.zero : timers.transactionTimeout
            return [.sendAck(ackForNon2xx(response)), .rejected(response), .arm(.d, at: now + wait)]
        case (.completed, 300...):
            return [.sendAck(ackForNon2xx(response))]
        case (.accepted, 200..<300):
            return [.answeredAgain(response)]
        default:
            return []
        }
    }

    mutating func flowClosed() -> [Action] {
        guard state == .calling || state == .proceeding else { return [] }
        state = .terminated
        return [.fail(.flowClosed), .terminated]
    }

    /// The hop-by-hop ACK of RFC 3261 §17.1.1.3: Request-URI, Call-ID, From, the top Via (same
    /// branch) and Route of the INVITE, the To of the response (its tag), CSeq number of the INVITE.
    func ackForNon2xx(_ response: SIPMessage) -> SIPMessage {
        guard case .request(_, let uri) = invite.startLine else { preconditionFailure("INVITE is a request") }
        var ack = SIPMessage.request("ACK", uri: uri)
        if let via = invite.headers.listValues("Via").first { ack.headers.add("Via", via) }
        for name in ["Max-Forwards", "From"] { if let value = invite.headers[name] { ack.headers.add(name, value) } }
        if let to = response.headers["To"] ?? invite.headers["To"] { ack.headers.add("To", to) }
        if let callID = invite.headers["Call-ID"] { ack.headers.add("Call-ID", callID) }
        ack.headers.add("CSeq", "\(invite.cseq?.number ?? 1) ACK")
        for route in invite.headers.values("Route") { ack.headers.add("Route", route) }
        return ack
    }
}

extension SIPMessage {
    /// The end-to-end ACK for a 2xx to `invite` (RFC 3261 §13.2.2.4, built as §12.2.1.1 says),
    /// which the dialog layer sends and resends on each retransmitted 2xx.
    ///
    /// The Request-URI is the dialog's remote target and `Route` carries its route set; when the
    /// first route is a strict router (no `lr`), it becomes the Request-URI and the remote target
    /// goes last in `Route` (§12.2.1.1). CSeq is the INVITE's number with method ACK; `via` must
    /// carry a new branch (the ACK for a 2xx is its own transaction).
    /// - Parameters:
    ///   - routeSet: the dialog's route set in order (Record-Route of the 2xx, reversed, for a UAC),
    ///     each a `name-addr` or URI.
    ///   - remoteTarget: the Contact URI of the 2xx (or the dialog's refreshed target).
    static func ackFor2xx(
        invite: SIPMessage, response: SIPMessage, routeSet: [String], remoteTarget: String, via: String
    ) -> SIPMessage {
        let (uri, routes) = Dialog.routing(remoteTarget: remoteTarget, routeSet: routeSet)
        var ack = SIPMessage.request("ACK", uri: uri)
        ack.headers.add("Via", via)
        ack.headers.add("Max-Forwards", "70")
        for name in ["From", "To"] {
            let source = name == "To" ? (response.headers[name] ?? invite.headers[name]) : invite.headers[name]
            if let value = source { ack.headers.add(name, value) }
        }
        if let callID = invite.headers["Call-ID"] { ack.headers.add("Call-ID", callID) }
        ack.headers.add("CSeq", "\(invite.cseq?.number ?? 1) ACK")
        for route in routes { ack.headers.add("Route", route) }
        return ack
    }
}
