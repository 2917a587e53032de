internal import ResilienceCore
internal import Synchronization

/// The open server transactions of one user agent, matched as RFC 3261 §17.2.3 says: top Via
/// `branch` and sent-by plus the method. An `ACK` never opens one: it matches the INVITE
/// transaction whose non-2xx final it acknowledges, or goes on to the transaction user (the ACK
/// for a 2xx, §17.2.1); a `CANCEL` opens its own transaction and is matched to the INVITE one (§9.2).
///
/// Lives where datagrams arrive (NIO's threads), so it is a locked table, not an actor: a
/// retransmission is answered there and then, without a hop. Invariants: a request opens at most
/// one transaction; a non-INVITE entry whose timer J passed is forgotten by the table's one sweep
/// (armed when a final is sent and none is armed, it forgets every finished entry one timer J
/// later and re-arms only while a completed one waits: no timer per transaction, none at all
/// for an idle agent, and a burst's entries do not outlive it); INVITE entries run their timers (G, H, I, L)
/// as sleeps on the lent clock and are removed when they terminate; at most ``limit``
/// transactions are held (``endingReserve`` more for CANCEL and BYE, so a caller can still end
/// what fills the table): when full, finished ones are dropped first, then non-INVITE ones that
/// sent their final or INVITEs whose non-2xx was ACKed (only a retransmission's absorption is
/// lost), and a request that still finds no room is answered at once, statelessly, and not
/// delivered: an INVITE `486 Busy Here`, any other request `503` with `Retry-After`. New
/// transactions pass ``InboundAdmission`` first (a flood of strangers, or a storm in one dialog,
/// is answered `503` with `Retry-After`); retransmissions never count against it. Timer H (a
/// non-2xx final never ACKed) is never silent: the handler set with ``onAckTimeout(_:)`` hears
/// the INVITE once.
final class ServerTransactionTable: Sendable {
    struct Key: Hashable, Sendable {
        var branch: String
        var sentBy: String
        var method: String
    }

    /// What to do with an arriving request.
    enum Arrival: Sendable {
        /// The first copy: deliver it to the transaction user with this transaction.
        case new(ServerTransaction)
        /// A retransmission: send `answer` again (nil: absorbed, no response yet).
        case retransmission(answer: SIPMessage?)
        /// No usable Via: dropped unanswered (a response could not be routed).
        case refused
        /// Refused at the door (table full, or too fast): send this answer, nothing was opened.
        case answered(SIPMessage)
    }

    /// Where an arriving ACK goes.
    enum AckMatch: Hashable, Sendable {
        /// It acknowledged a non-2xx final of an INVITE server transaction (or repeated that).
        case absorbed
        /// No INVITE transaction awaits it: an ACK for a 2xx, for the transaction user (dialog).
        case forTransactionUser
    }

    private enum Machine {
        case nonInvite(NonInviteServerTransaction)
        case invite(InviteServerTransaction)
    }

    private struct Entry {
        var machine: Machine
        let reply: @Sendable (SIPMessage) -> Void

        func isTerminated(at now: ContinuousClock.Instant) -> Bool {
            switch machine {
            case .nonInvite(let transaction): transaction.isTerminated(at: now)
            case .invite(let transaction): transaction.isTerminated
            }
        }

        /// Whether a full table may drop it: terminated, a non-INVITE that sent its final, or an
        /// INVITE whose non-2xx final was ACKed (timer I only absorbs repeated ACKs).
        func isDroppable(at now: ContinuousClock.Instant) -> Bool {
            switch machine {
            case .nonInvite(let transaction):
                if case .completed = transaction.state { return true }
            case .invite(let transaction):
                if transaction.state == .confirmed { return true }
            }
            return isTerminated(at: now)
        }
    }

    /// Transactions held at most, by default.
    static let capacity = 512
    /// Room beyond ``limit`` for CANCEL and BYE only: they end ringing calls and dialogs (so
    /// they free slots), and the agent answers them at once (so they leave quickly).
    static let endingReserve = 64

    /// Transactions held at most (``capacity`` unless a test asks for fewer).
    let limit: Int
    private let entries = Mutex<[Key: Entry]>([:])
    /// Whether the sweep of finished transactions is armed (at most one per table).
    private let sweepArmed = Mutex(false)
    private let admission: Mutex<InboundAdmission>
    /// Told the INVITE whose non-2xx final timer H gave up on (the peer is gone, §17.2.1).
    private let ackTimeoutHandler = Mutex<(@Sendable (SIPMessage) -> Void)?>(nil)
    let timers: SIPTimers
    /// Where INVITE transactions' timers sleep (the agent's lent clock).
    let clock: any RuntimeClock

    init(
        timers: SIPTimers, clock: any RuntimeClock = ContinuousClock(), limit: Int = capacity,
        admission: InboundAdmission.Settings = InboundAdmission.Settings()
    ) {
        self.timers = timers
        self.clock = clock
        self.limit = max(1, limit)
        self.admission = Mutex(InboundAdmission(settings: admission))
    }

    /// Sets who hears an INVITE whose non-2xx final was never ACKed (timer H); the call layer
    /// reports that call lost.
    func onAckTimeout(_ handler: @escaping @Sendable (SIPMessage) -> Void) {
        ackTimeoutHandler.withLock { $0 = handler }
    }

    /// Matches `request` (not an ACK) to a transaction or opens one; a new INVITE is answered
    /// `100 Trying` before this returns.
    func receive(
        _ request: SIPMessage, reliable: Bool, at now: ContinuousClock.Instant,
        reply: @escaping @Sendable (SIPMessage) -> Void
    ) -> Arrival {
        guard let key = Self.key(of: request) else { return .refused }
        var started: [InviteServerTransaction.Action] = []
        let arrival: Arrival = entries.withLock { entries in
            if let existing = entries[key], !existing.isTerminated(at: now) {
                switch existing.machine {
                case .nonInvite(let transaction): return .retransmission(answer: transaction.requestRetransmitted())
                case .invite(let transaction):
                    return .retransmission(answer: transaction.requestRetransmitted().first?.sent)
                }
            }
            let ending = key.method == "CANCEL" || key.method == "BYE"
            let room = limit + (ending ? Self.endingReserve : 0)
            if entries.count >= limit { entries = entries.filter { !$0.value.isDroppable(at: now) } }
            guard entries.count < room else { return .answered(InboundAdmission.busy(request)) }
            if case .tooFast(let seconds) = admission.withLock({ $0.admit(request, at: now) }) {
                return .answered(InboundAdmission.tooFast(request, retryAfter: seconds))
            }
            if key.method == "INVITE" {
                var transaction = InviteServerTransaction(invite: request, reliable: reliable, timers: timers)
                started = transaction.start(at: now)
                entries[key] = Entry(machine: .invite(transaction), reply: reply)
            } else {
                let transaction = NonInviteServerTransaction(reliable: reliable, timers: timers)
                entries[key] = Entry(machine: .nonInvite(transaction), reply: reply)
            }
            return .new(ServerTransaction(key: key, table: self))
        }
        perform(started, for: key, invite: request, reply: reply)
        return arrival
    }

    /// Sends the transaction user's response through its transaction; true when it was sent
    /// (false after a final, or when the transaction is gone).
    @discardableResult
    func respond(_ key: Key, with response: SIPMessage, at now: ContinuousClock.Instant) -> Bool {
        let outcome: ([InviteServerTransaction.Action], Entry)? = entries.withLock { entries in
            guard var entry = entries[key] else { return nil }
            switch entry.machine {
            case .nonInvite(var transaction):
                let send = transaction.respond(response, at: now)
                entry.machine = .nonInvite(transaction)
                entries[key] = entry
                // A final starts timer J: one sweep, armed once for the whole table, forgets it.
                if send, (response.status ?? 0) >= 200 { armSweep() }
                return (send ? [.send(response)] : [], entry)
            case .invite(var transaction):
                let actions = transaction.respond(response, at: now)
                entry.machine = .invite(transaction)
                entries[key] = entry
                return (actions, entry)
            }
        }
        guard let (actions, entry) = outcome else { return false }
        perform(actions, for: key, entry: entry)
        return actions.contains { $0.sent != nil }
    }

    /// Matches an ACK to the INVITE server transaction it acknowledges (same branch, §17.2.3).
    func acknowledge(_ ack: SIPMessage, at now: ContinuousClock.Instant) -> AckMatch {
        guard let key = Self.key(of: ack, as: "INVITE") else { return .forTransactionUser }
        let outcome: ([InviteServerTransaction.Action], Entry)? = entries.withLock { entries in
            guard var entry = entries[key], case .invite(var transaction) = entry.machine,
                transaction.state == .completed || transaction.state == .confirmed
            else { return nil }
            let actions = transaction.ackReceived(at: now)
            entry.machine = .invite(transaction)
            entries[key] = entry
            return (actions, entry)
        }
        guard let (actions, entry) = outcome else { return .forTransactionUser }
        perform(actions, for: key, entry: entry)
        return .absorbed
    }

    /// A CANCEL that matched an INVITE server transaction: answer it 200 with ``toTag``, the To
    /// tag of the INVITE's response (§9.2).
    struct CancelMatch: Hashable, Sendable {
        var toTag: String?
    }

    /// Matches a CANCEL to the INVITE server transaction it cancels (§9.2) and answers that
    /// INVITE `487` when it is still Proceeding. nil when nothing matched: answer the CANCEL 481.
    func cancel(_ cancel: SIPMessage, at now: ContinuousClock.Instant) -> CancelMatch? {
        guard let key = Self.key(of: cancel, as: "INVITE") else { return nil }
        let outcome: ([InviteServerTransaction.Action], Entry, String?)? = entries.withLock { entries in
            guard var entry = entries[key], case .invite(var transaction) = entry.machine, !transaction.isTerminated
            else { return nil }
            let actions = transaction.cancelled(fallbackTag: randomToken(), at: now)
            entry.machine = .invite(transaction)
            entries[key] = entry
            return (actions, entry, transaction.toTag)
        }
        guard let (actions, entry, toTag) = outcome else { return nil }
        perform(actions, for: key, entry: entry)
        return CancelMatch(toTag: toTag)
    }

    /// Arms the table's one sweep of finished transactions, unless it is armed: it runs one
    /// timer J (64×T1) after now, so every entry completed by then is over.
    private func armSweep() {
        guard
            sweepArmed.withLock({ armed in
                defer { armed = true }; return !armed
            })
        else { return }
        let (clock, wait) = (self.clock, timers.transactionTimeout + .milliseconds(100))
        Task { [weak self] in
            guard (try? await clock.sleep(until: clock.now.advanced(by: wait), tolerance: nil)) != nil else { return }
            self?.sweepFinished()
        }
    }

    /// Forgets every finished transaction now (a burst's entries would otherwise stay until the
    /// table next filled: up to ``limit`` requests and answers per account kept after a flood),
    /// and arms the sweep again while a completed one waits for its timer J.
    private func sweepFinished() {
        let now = clock.now
        let waiting = entries.withLock { entries in
            entries = entries.filter { !$0.value.isTerminated(at: now) }
            return entries.values.contains { entry in
                guard case .nonInvite(let transaction) = entry.machine, case .completed = transaction.state else {
                    return false
                }
                return true
            }
        }
        sweepArmed.withLock { $0 = false }
        if waiting { armSweep() }
    }

    /// Drops a transaction whose request was never delivered, so a retransmission is new.
    func forget(_ key: Key) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// Transactions held, finished ones included until they are swept (for tests).
    var count: Int { entries.withLock { $0.count } }

    /// The INVITE transaction's state, if one is held under `key` (for tests and the call layer).
    func inviteState(_ key: Key) -> InviteServerTransaction.State? {
        entries.withLock { entries in
            guard case .invite(let transaction) = entries[key]?.machine else { return nil }
            return transaction.state
        }
    }

    private func perform(_ actions: [InviteServerTransaction.Action], for key: Key, entry: Entry) {
        guard case .invite(let transaction) = entry.machine else {
            return perform(actions, for: key, invite: nil, reply: entry.reply)
        }
        perform(actions, for: key, invite: transaction.invite, reply: entry.reply)
    }

    /// Sends, arms (a sleep on ``clock`` per timer), reports timer H and forgets as an INVITE
    /// transaction says.
    private func perform(
        _ actions: [InviteServerTransaction.Action], for key: Key, invite: SIPMessage?,
        reply: @Sendable (SIPMessage) -> Void
    ) {
        for action in actions {
            switch action {
            case .send(let response): reply(response)
            case .arm(let timer, let deadline):
                let clock = self.clock
                Task { [weak self] in
                    guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
                    self?.fire(timer, for: key)
                }
            case .ackTimedOut:
                if let invite, let handler = ackTimeoutHandler.withLock({ $0 }) { handler(invite) }
            case .terminated: forget(key)
            }
        }
    }

    private func fire(_ timer: InviteServerTransaction.Timer, for key: Key) {
        let now = clock.now
        let outcome: ([InviteServerTransaction.Action], Entry)? = entries.withLock { entries in
            guard var entry = entries[key], case .invite(var transaction) = entry.machine else { return nil }
            let actions = transaction.timerFired(timer, at: now)
            entry.machine = .invite(transaction)
            entries[key] = entry
            return (actions, entry)
        }
        guard let (actions, entry) = outcome else { return }
        perform(actions, for: key, entry: entry)
    }

    /// The matching key of a request other than ACK (nil for an ACK: it opens nothing).
    static func key(of request: SIPMessage) -> Key? {
        guard let method = request.method?.uppercased(), method != "ACK" else { return nil }
        return key(of: request, as: method)
    }

    /// The matching key of `request` as if its method were `method` (an ACK or CANCEL looks up
    /// its INVITE): the RFC 3261 branch when it has the magic cookie; otherwise (RFC 2543 peers)
    /// Call-ID, CSeq number and From tag stand in for it.
    static func key(of request: SIPMessage, as method: String) -> Key? {
        guard let via = request.headers.listValues("Via").first else { return nil }
        let sentBy = String(via.split(separator: ";", maxSplits: 1)[0]).trimmingSIPWhitespace()
        if let branch = request.topViaBranch, branch.hasPrefix("z9hG4bK") {
            return Key(branch: branch, sentBy: sentBy, method: method)
        }
        let fromTag = request.tag(in: "From") ?? ""
        let number = request.cseq.map { "\($0.number)" } ?? (request.headers["CSeq"] ?? "")
        let legacy = "\(request.headers["Call-ID"] ?? "")|\(number) \(method)|\(fromTag)"
        return Key(branch: legacy, sentBy: sentBy, method: method)
    }
}

extension InviteServerTransaction.Action {
    /// The response a `send` action carries.
    fileprivate var sent: SIPMessage? {
        if case .send(let response) = self { response } else { nil }
    }
}
