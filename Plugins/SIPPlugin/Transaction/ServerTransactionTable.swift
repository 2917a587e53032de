internal import Synchronization

/// The open server transactions of one user agent, matched as RFC 3261 §17.2.3 says: top Via
/// `branch` and sent-by plus the method (an `ACK` never opens one: with no INVITE server
/// transaction yet there is nothing for it to match).
///
/// Lives where datagrams arrive (NIO's threads), so it is a locked table, not an actor: a
/// retransmission is answered there and then, without a hop. Invariants: a request opens at most
/// one transaction; an entry whose timer J passed is forgotten lazily (no timer task runs, so an
/// idle agent has no wake-ups); at most ``capacity`` transactions are held: when full, finished
/// ones are dropped first, and a request that still finds no room is refused (not delivered).
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
        /// No room (the agent is not answering) or no usable Via: dropped.
        case refused
    }

    static let capacity = 512

    private let entries = Mutex<[Key: NonInviteServerTransaction]>([:])
    let timers: SIPTimers

    init(timers: SIPTimers) { self.timers = timers }

    /// Matches `request` (not an ACK) to a transaction or opens one.
    func receive(
        _ request: SIPMessage, reliable: Bool, at now: ContinuousClock.Instant,
        reply: @escaping @Sendable (SIPMessage) -> Void
    ) -> Arrival {
        guard let key = Self.key(of: request) else { return .refused }
        return entries.withLock { entries in
            if let existing = entries[key], !existing.isTerminated(at: now) {
                return .retransmission(answer: existing.requestRetransmitted())
            }
            if entries.count >= Self.capacity { entries = entries.filter { !$0.value.isTerminated(at: now) } }
            guard entries.count < Self.capacity else { return .refused }
            entries[key] = NonInviteServerTransaction(reliable: reliable, timers: timers)
            return .new(ServerTransaction(key: key, table: self, reply: reply))
        }
    }

    /// Records the transaction user's response; true when it is to be sent.
    func respond(_ key: Key, with response: SIPMessage, at now: ContinuousClock.Instant) -> Bool {
        entries.withLock { entries in
            guard var transaction = entries[key] else { return false }
            let send = transaction.respond(response, at: now)
            entries[key] = transaction
            return send
        }
    }

    /// Drops a transaction whose request was never delivered, so a retransmission is new.
    func forget(_ key: Key) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// Transactions held, finished ones included until they are swept (for tests).
    var count: Int { entries.withLock { $0.count } }

    /// The matching key: the RFC 3261 branch when it has the magic cookie; otherwise (RFC 2543
    /// peers) Call-ID, CSeq and From tag stand in for it.
    static func key(of request: SIPMessage) -> Key? {
        guard let method = request.method?.uppercased(), method != "ACK",
            let via = request.headers.listValues("Via").first
        else { return nil }
        let sentBy = String(via.split(separator: ";", maxSplits: 1)[0]).trimmingSIPWhitespace()
        if let branch = request.topViaBranch, branch.hasPrefix("z9hG4bK") {
            return Key(branch: branch, sentBy: sentBy, method: method)
        }
        let fromTag = request.headers["From"].flatMap { SIPParameters.parse(afterFirstSemicolon: $0)["tag"] } ?? ""
        let legacy = "\(request.headers["Call-ID"] ?? "")|\(request.headers["CSeq"] ?? "")|\(fromTag)"
        return Key(branch: legacy, sentBy: sentBy, method: method)
    }
}

/// One server transaction as the transaction user holds it: answer through it, never around it,
/// so a retransmitted request gets the same answer.
struct ServerTransaction: Sendable {
    let key: ServerTransactionTable.Key
    let table: ServerTransactionTable
    let reply: @Sendable (SIPMessage) -> Void

    /// Sends `response` unless a final response was sent already.
    func respond(_ response: SIPMessage, at now: ContinuousClock.Instant) {
        if table.respond(key, with: response, at: now) { reply(response) }
    }
}

/// An inbound request with the server transaction that answers it, in arrival order.
struct InboundRequest: Sendable {
    let message: SIPMessage
    let transaction: ServerTransaction
}
