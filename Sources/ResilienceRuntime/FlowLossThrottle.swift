public import ResilienceCore
public import ResilienceRules
import Synchronization

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
/// - ``releaseDue(at:succeeded:)`` releases every waiting service whose delay is over, together,
///   so losses waiting together become one trigger.
/// - A held loss is moot for every service whose action succeeded after its latest loss (the
///   executor's retry bound the account again while the report waited): the release drops it,
///   since deciding it would only repeat what just succeeded (one more REGISTER, PUBLISH or
///   SUBSCRIBE). The other services of the report are released as ever; when none remains,
///   nothing is released. A loss reported after the success stands.
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

    /// Removes every waiting service whose delay is over at `now` and returns, sorted, those
    /// whose loss still stands: not those whose latest success in `succeeded` (each service's
    /// latest `.succeeded` action outcome) came after their latest loss.
    public mutating func releaseDue(
        at now: ContinuousClock.Instant, succeeded: [ServiceID: ContinuousClock.Instant] = [:]
    ) -> [ServiceID] {
        let due = waiting.filter { $0.value <= now }.keys.sorted()
        for id in due { waiting.removeValue(forKey: id) }
        return due.filter { id in
            guard let success = succeeded[id], let loss = history[id]?.lastLoss else { return true }
            return success <= loss
        }
    }
}

/// Each service's latest successful action, written synchronously by the executor's event sink
/// (so it is current before anyone sees the event) and read when held flow losses are released
/// (``FlowLossThrottle/releaseDue(at:succeeded:)``).
final class LatestSuccesses: Sendable {
    private let instants = Mutex<[ServiceID: ContinuousClock.Instant]>([:])

    /// Records that an action of `service` succeeded at `instant`.
    func record(_ service: ServiceID, at instant: ContinuousClock.Instant) {
        instants.withLock { $0[service] = max(instant, $0[service] ?? instant) }
    }

    /// Forgets a service no longer tracked.
    func forget(_ service: ServiceID) { _ = instants.withLock { $0.removeValue(forKey: service) } }

    /// A copy of every service's latest success.
    var snapshot: [ServiceID: ContinuousClock.Instant] { instants.withLock { $0 } }
}
