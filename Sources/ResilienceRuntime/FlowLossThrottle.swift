public import ResilienceCore
public import ResilienceRules

/// Turns plugins' flow-loss reports into `flow.lost` triggers without letting a server that
/// accepts a flow and drops it at once cause a storm of re-registrations.
///
/// Pure: time is passed in, jitter comes from the seeded generator. Invariants:
/// - The services of one report (one lost flow: an account's registration and what rode on it)
///   are decided together: all at once, or all at one release instant, never split, so the
///   rules see the registration and its subscriptions in one `flow.lost` batch and order them.
/// - A service's first loss (or its first after `backoff.maximum` without one) needs no wait,
///   and its count of consecutive losses starts at 1.
/// - Each further loss within `backoff.maximum` of the previous one raises the count to n and
///   needs the executor's jittered backoff for n − 1 failures (`BackoffPolicy/delay(afterFailures:using:)`):
///   the second loss waits about `initial`, the next ones grow by `multiplier` up to `maximum`.
///   A report waits as long as its member that needs the longest wait.
/// - A loss of a service already waiting counts as its latest loss but adds no trigger: the
///   report joins that wait (and a report that must wait longer takes the waiting group along).
/// - ``releaseDue(at:)`` releases every waiting service whose delay is over, together, so
///   losses waiting together become one trigger.
public struct FlowLossThrottle: Sendable {
    private struct History: Sendable {
        var count: Int
        var lastLoss: ContinuousClock.Instant
    }

    public let backoff: BackoffPolicy
    private var random: SplitMix64
    private var history: [ServiceID: History] = [:]
    private var waiting: [ServiceID: ContinuousClock.Instant] = [:]

    public init(backoff: BackoffPolicy, randomSeed: UInt64) {
        self.backoff = backoff
        self.random = SplitMix64(seed: randomSeed)
    }

    /// When the earliest waiting service is due; nil when none waits.
    public var nextRelease: ContinuousClock.Instant? { waiting.values.min() }

    /// Services waiting for their release, sorted.
    public var waitingServices: [ServiceID] { waiting.keys.sorted() }

    /// Records a report and returns the services to decide at once, sorted and without duplicates:
    /// all of them, or none (then they wait together; see ``nextRelease``).
    public mutating func report(_ services: [ServiceID], at now: ContinuousClock.Instant) -> [ServiceID] {
        let group = Set(services).sorted()
        var release = now
        var joined: Set<ContinuousClock.Instant> = []
        for id in group {
            if let instant = waiting[id] {
                history[id]?.lastLoss = now
                joined.insert(instant)
                release = max(release, instant)
                continue
            }
            guard var past = history[id], now - past.lastLoss < backoff.maximum else {
                history[id] = History(count: 1, lastLoss: now)
                continue
            }
            past.count += 1
            past.lastLoss = now
            history[id] = past
            release = max(release, now + backoff.delay(afterFailures: past.count - 1, using: &random))
        }
        if release <= now && joined.isEmpty { return group }
        // Groups that waited for an earlier instant move with this one: none of them is split.
        for (id, instant) in waiting where joined.contains(instant) { waiting[id] = release }
        for id in group { waiting[id] = release }
        return []
    }

    /// Removes and returns, sorted, every waiting service whose delay is over at `now`.
    public mutating func releaseDue(at now: ContinuousClock.Instant) -> [ServiceID] {
        let due = waiting.filter { $0.value <= now }.keys.sorted()
        for id in due { waiting.removeValue(forKey: id) }
        return due
    }
}
