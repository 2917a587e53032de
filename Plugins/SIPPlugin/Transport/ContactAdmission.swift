internal import Logging
internal import NIOCore
internal import ResilienceCore
internal import Synchronization

/// How many requests one account's Contact lets in: a token bucket, so a peer that floods the
/// Contact costs a bounded rate of work however fast it sends, while the ordinary traffic of
/// calls (a few requests per second) never waits.
///
/// The defaults keep a flood through the Contact alone from filling the account's server
/// transactions: a UDP transaction is held for timer J (64×T1, 32 s by default) after its
/// answer, and `burst + rate × 32 s` stays under ``ServerTransactionTable/capacity``, so
/// requests through the registrar still find room.
///
/// A pure value with time passed in. Invariants: at most `burst` requests are admitted at once
/// after a quiet spell, and at most `burst + rate × t` within any `t`; time running backwards
/// admits nothing extra.
struct ContactAdmission: Hashable, Sendable {
    /// Requests per second admitted in the long run (at least 1).
    let rate: Int
    /// Requests admitted back to back after a quiet spell (at least 1).
    let burst: Int
    /// Full (`burst` tokens) at the first request.
    private var bucket: TokenBucket?

    init(rate: Int = 10, burst: Int = 40) {
        self.rate = max(1, rate)
        self.burst = max(1, burst)
    }

    /// Whether one request arriving at `now` is let in.
    mutating func admit(at now: ContinuousClock.Instant) -> Bool {
        var bucket = self.bucket ?? TokenBucket(tokens: Double(burst), updated: now)
        defer { self.bucket = bucket }
        return bucket.take(at: now, rate: Double(rate), burst: Double(burst)) == nil
    }
}

/// The door of a Contact listener for requests from anywhere (``ContactListener``): admits
/// each account's requests at a bounded rate (one ``ContactAdmission`` per account, so a flood
/// aimed at one account leaves the others on a shared socket alone), marks their top `Via`
/// with their source (``ReceivedVia``), and counts the connections a stream listener evicts.
///
/// Invariants: a response arriving at a listener takes the account's bucket like a request and
/// goes on unmarked to the account's transactions (an agent sends the requests of a dialog with no
/// route set to the remote target, whose answers come from there; one that matches no transaction
/// of the account is dropped there, logged); every drop is counted
/// (``refused``, with the connections evicted to make room) and logged through the throttled
/// log; an answer to a connection whose peer stopped reading (not
/// writable) is dropped, not queued; at most ``maximumAccounts`` buckets are kept (past that they
/// all start afresh: accounts come from configuration, not from the wire).
final class ContactGate: Sendable {
    /// A listener's connection that carried nothing this long is closed.
    static let idleConnection = TimeAmount.seconds(120)

    /// Accounts whose buckets one gate keeps.
    static let maximumAccounts = 4_096

    let log: ThrottledLog
    private let settings: ContactAdmission
    private let buckets = Mutex<[String: ContactAdmission]>([:])
    private let refusedCount = Atomic<Int>(0)

    /// - Parameter admission: the bucket each account starts with.
    init(log: ThrottledLog, admission: ContactAdmission = ContactAdmission()) {
        self.log = log
        self.settings = admission
    }

    /// Messages refused at this door (over the rate, requests without a usable Via) and
    /// connections evicted.
    var refused: Int { refusedCount.load(ordering: .relaxed) }

    /// The message to hand up to the account `account` names (its flow tag): a request with its
    /// Via marked, a response as it came; nil when it is refused.
    func admit(_ message: SIPMessage, from source: SocketAddress?, for account: String) -> SIPMessage? {
        let admitted = buckets.withLock { buckets in
            if buckets[account] == nil, buckets.count >= Self.maximumAccounts { buckets.removeAll() }
            return buckets[account, default: settings].admit(at: .now)
        }
        guard admitted else { return refuse(message, "sip.contact-over-rate") }
        guard message.isRequest else { return message }
        guard let host = source?.ipAddress, let port = source?.port,
            let stamped = ReceivedVia.stamped(message, sourceHost: host, sourcePort: port)
        else { return refuse(message, "sip.contact-no-via") }
        return stamped
    }

    /// `channels` were closed to make room for a new connection (``ContactConnections``).
    func evicted(_ channels: [any Channel]) {
        guard !channels.isEmpty else { return }
        for channel in channels { channel.close(promise: nil) }
        refusedCount.add(channels.count, ordering: .relaxed)
        log.log(
            .notice, "sip.contact-connection-evicted",
            metadata: ["count": "\(channels.count)", "maximum": "\(ContactConnections.maximum)"])
    }

    private func refuse(_ message: SIPMessage, _ kind: String) -> SIPMessage? {
        refusedCount.add(1, ordering: .relaxed)
        log.log(.notice, kind, metadata: TransactionLayer.describe(message))
        return nil
    }
}
