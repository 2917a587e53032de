internal import ResilienceCore

/// The door of the server-transaction table: how fast requests may open new transactions, as a
/// value with time passed in (no clock, no I/O).
///
/// Two kinds of token bucket (RFC 3261 §21.5.4: a server that is overloaded answers 503 with
/// `Retry-After`):
/// - **strangers**: one bucket for every request that claims no dialog the door knows (no To
///   tag, or the first request of a dialog key not seen before). All of an account's requests
///   come from its registrar or proxy, so "per source" is per account: a forged flood through
///   the proxy cannot open transactions faster than ``Settings/strangerRate``.
/// - **dialogs**: one bucket per dialog key (Call-ID, From tag, To tag), so a re-INVITE or
///   NOTIFY storm in one dialog is answered 503 at once instead of filling the table.
///
/// Invariants: at most ``Settings/maximumDialogs`` dialog buckets are held (a new key replaces
/// the one idle the longest); a bucket never holds more than its burst, so an idle hour buys no
/// flood; `CANCEL` and `BYE` are always admitted (they end work, and a peer must be able to hang
/// up during a storm); a refusal names a whole number of seconds, at least 1, to retry after.
struct InboundAdmission: Sendable {
    struct Settings: Hashable, Sendable {
        /// New transactions per second for requests of no known dialog, and the burst allowed.
        var strangerRate: Double = 16
        var strangerBurst: Double = 32
        /// Requests per second within one dialog, and the burst allowed: far above what a call
        /// or a subscription sends (a re-INVITE per network change, a NOTIFY per refresh), far
        /// below a storm (issue 25: 1,000 re-INVITEs in 15 s).
        var dialogRate: Double = 8
        var dialogBurst: Double = 32
        /// Dialog buckets held at most.
        var maximumDialogs = 256
    }

    enum Verdict: Hashable, Sendable {
        case admit
        /// Answer 503 with `Retry-After: seconds` and open nothing.
        case tooFast(retryAfter: Int)
    }

    struct DialogKey: Hashable, Sendable {
        var callID: String
        var fromTag: String
        var toTag: String
    }

    let settings: Settings
    private var strangers: TokenBucket?
    private(set) var dialogs: [DialogKey: TokenBucket] = [:]

    init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Decides whether `request` (not an ACK, not a retransmission) may open a transaction at `now`.
    mutating func admit(_ request: SIPMessage, at now: ContinuousClock.Instant) -> Verdict {
        let method = request.method?.uppercased() ?? ""
        if method == "CANCEL" || method == "BYE" { return .admit }
        guard let toTag = request.tag(in: "To"), let callID = request.headers["Call-ID"] else {
            return takeStranger(at: now)
        }
        let key = DialogKey(callID: callID, fromTag: request.tag(in: "From") ?? "", toTag: toTag)
        if var bucket = dialogs[key] {
            let wait = bucket.take(at: now, rate: settings.dialogRate, burst: settings.dialogBurst)
            dialogs[key] = bucket
            return wait.map { .tooFast(retryAfter: Self.seconds($0)) } ?? .admit
        }
        // A dialog key not seen before costs a stranger's token: forged To tags are strangers.
        let verdict = takeStranger(at: now)
        guard verdict == .admit else { return verdict }
        if dialogs.count >= settings.maximumDialogs, let idle = dialogs.min(by: { $0.value.updated < $1.value.updated })
        {
            dialogs[idle.key] = nil
        }
        dialogs[key] = TokenBucket(tokens: settings.dialogBurst - 1, updated: now)
        return .admit
    }

    private mutating func takeStranger(at now: ContinuousClock.Instant) -> Verdict {
        var bucket = strangers ?? TokenBucket(tokens: settings.strangerBurst, updated: now)
        let wait = bucket.take(at: now, rate: settings.strangerRate, burst: settings.strangerBurst)
        strangers = bucket
        return wait.map { .tooFast(retryAfter: Self.seconds($0)) } ?? .admit
    }

    /// Whole seconds to wait, rounded up, at least 1 (`Retry-After` is delta-seconds).
    static func seconds(_ wait: Duration) -> Int {
        let nanoseconds = wait.nanosecondsValue
        return max(1, Int((nanoseconds + 999_999_999) / 1_000_000_000))
    }
}

extension InboundAdmission {
    /// The stateless answer at capacity: `486 Busy Here` to an INVITE (the user is busy, RFC
    /// 3261 §21.4.24), `503` with `Retry-After` to anything else.
    static func busy(_ request: SIPMessage) -> SIPMessage {
        guard request.method?.uppercased() == "INVITE" else { return tooFast(request, retryAfter: 5) }
        return request.makeResponse(status: 486, reason: "Busy Here", toTag: randomToken())
    }

    /// `503 Service Unavailable` with `Retry-After` (RFC 3261 §21.5.4, §20.33).
    static func tooFast(_ request: SIPMessage, retryAfter seconds: Int) -> SIPMessage {
        var answer = request.makeResponse(
            status: 503, reason: "Service Unavailable", toTag: request.tag(in: "To") == nil ? randomToken() : nil)
        answer.headers.add("Retry-After", "\(seconds)")
        return answer
    }
}
