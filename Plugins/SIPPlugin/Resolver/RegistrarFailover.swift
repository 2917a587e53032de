/// Which of a registrar's targets (RFC 3263 order) an account uses, and when it tries the
/// preferred one again: a value the agent keeps, with the clock outside.
///
/// Invariants: ``current`` indexes ``targets`` whenever there are any; a failure of the current
/// target moves to the next one at once, and a failure of the last returns to the first and says
/// so (every target failed: the executor's backoff applies, and the next attempt starts again at
/// the preferred one); while bound on another than the first, the first is probed no sooner than
/// ``probeDelay`` after the binding and after each failed probe, the delay growing ×1.6 from
/// 1 s to 120 s (the executor's backoff numbers), so a dead preferred server is not hammered.
struct RegistrarFailover: Sendable {
    static let firstProbeDelay: Duration = .seconds(1)
    static let maximumProbeDelay: Duration = .seconds(120)

    private(set) var targets: [SIPTarget] = []
    private(set) var current = 0
    private(set) var probeDelay = Self.firstProbeDelay
    private(set) var nextProbe: ContinuousClock.Instant?

    /// The target requests go to now.
    var target: SIPTarget? { targets.isEmpty ? nil : targets[current] }

    /// The preferred target (first in RFC 3263 order).
    var preferred: SIPTarget? { targets.first }

    /// Whether the account uses another target than the preferred one.
    var isOnBackup: Bool { current > 0 }

    /// A new resolution: the same list keeps the target in use (a TTL's re-resolution moves
    /// nobody); a changed one (a record change) starts at its own preferred target.
    mutating func update(_ resolved: [SIPTarget]) {
        guard resolved != targets else { return }
        targets = resolved
        current = 0
        nextProbe = nil
        probeDelay = Self.firstProbeDelay
    }

    /// `failed` did not answer (timeout, 503 without Retry-After, refused or reset, an unanswered
    /// flow ping). True when another target is next; false when it was the last (the next try
    /// starts at the preferred one). A failure of a target no longer current changes nothing.
    @discardableResult
    mutating func failed(_ failed: SIPTarget) -> Bool {
        guard let target, target == failed else { return target != nil && target != failed }
        if current + 1 < targets.count {
            current += 1
            return true
        }
        current = 0
        nextProbe = nil
        return false
    }

    /// The current target accepted a REGISTER at `now`: on a backup, the preferred one is probed
    /// after ``probeDelay``; on the preferred one, the delay starts over.
    mutating func bound(at now: ContinuousClock.Instant) {
        if current == 0 {
            probeDelay = Self.firstProbeDelay
            nextProbe = nil
        } else if nextProbe == nil {
            nextProbe = now + probeDelay
        }
    }

    /// The preferred target when a probe of it is due at `now`.
    func probeDue(at now: ContinuousClock.Instant) -> SIPTarget? {
        guard current > 0, let nextProbe, now >= nextProbe else { return nil }
        return targets.first
    }

    /// The probe of the preferred target went unanswered at `now`: the next waits longer.
    mutating func probeFailed(at now: ContinuousClock.Instant) {
        probeDelay = min(probeDelay * 1.6, Self.maximumProbeDelay)
        nextProbe = now + probeDelay
    }

    /// The preferred target answered its probe: requests go there again.
    mutating func probeAnswered() {
        current = 0
        nextProbe = nil
        probeDelay = Self.firstProbeDelay
    }
}
