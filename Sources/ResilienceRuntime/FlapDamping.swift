import Glibc
import ResilienceCore
public import ResilienceRules

/// Route-flap damping (RFC 2439) as a pure value: flaps in, "suppressed or not" out, time passed in.
///
/// Invariants, for a policy with a positive penalty and half-life:
/// - The penalty at any instant is the sum of the penalties of past flaps, each halved every
///   `halfLife` since it happened, capped at the ceiling `reuseThreshold × 2^(maximumSuppression / halfLife)`.
/// - Suppression starts when a flap brings the penalty to `suppressThreshold` or above, and ends
///   the first time it is asked about at or after ``reuseInstant``, when the penalty has decayed
///   below `reuseThreshold`; so it never lasts longer than `maximumSuppression` after the last flap.
/// - Below the threshold nothing is suppressed: with the default policy one flap or two act at once.
/// - `FlapDampingPolicy.off` (penalty 0) never suppresses.
/// - A network return held while suppressed waits at most ``longestStableHold`` once the link
///   stays up (``releaseInstant(ofReturnAt:)``): the penalty keeps a storm of flaps from costing
///   a decision each (every return is gone again before it is released), but a link that has
///   settled is acted on within seconds, not when the penalty has decayed (issue 22); that
///   release settles the damping (``settle(at:)``): the penalty drops to the reuse threshold.
public struct FlapDamping: Sendable, Hashable {
    /// How long a held network return waits at most while no loss follows it.
    public static let longestStableHold = Duration.seconds(5)

    public let policy: FlapDampingPolicy
    /// The penalty as of ``lastFlap``.
    private var penaltyAtLastFlap: Double = 0
    /// When the last flap happened; nil before the first.
    public private(set) var lastFlap: ContinuousClock.Instant?
    private var suppressing = false
    /// Flaps recorded so far.
    public private(set) var flaps = 0

    public init(policy: FlapDampingPolicy) {
        self.policy = policy
    }

    /// The decayed penalty at `now`.
    public func penalty(at now: ContinuousClock.Instant) -> Double {
        guard let lastFlap, penaltyAtLastFlap > 0 else { return 0 }
        let halfLife = policy.halfLife.secondsValue
        guard halfLife > 0 else { return 0 }
        let elapsed = max(0, (now - lastFlap).secondsValue)
        return penaltyAtLastFlap * exp2(-elapsed / halfLife)
    }

    /// Records one flap at `now` and returns whether actions are suppressed after it.
    public mutating func recordFlap(at now: ContinuousClock.Instant) -> Bool {
        flaps += 1
        guard policy.penalty > 0, policy.halfLife > .zero else { return false }
        penaltyAtLastFlap = min(penalty(at: now) + policy.penalty, ceiling)
        lastFlap = now
        if penaltyAtLastFlap >= policy.suppressThreshold { suppressing = true }
        return isSuppressed(at: now)
    }

    /// Whether actions are suppressed at `now`; ends the suppression once the penalty decayed
    /// below the reuse threshold.
    public mutating func isSuppressed(at now: ContinuousClock.Instant) -> Bool {
        if suppressing, penalty(at: now) < policy.reuseThreshold { suppressing = false }
        return suppressing
    }

    /// When the suppression ends if no flap comes before; nil when nothing is suppressed.
    public var reuseInstant: ContinuousClock.Instant? {
        guard suppressing, let lastFlap else { return nil }
        let reuse = max(policy.reuseThreshold, .leastNonzeroMagnitude)
        let halvings = max(0, log2(penaltyAtLastFlap / reuse))
        let wait = Duration.seconds(policy.halfLife.secondsValue * halvings) + .milliseconds(1)
        return lastFlap.adding(clamped: min(wait, policy.maximumSuppression + .milliseconds(1)))
    }

    /// When a network return that came at `returnedAt` and is held is released if no loss comes
    /// first: at ``reuseInstant``, or once the link has stayed up ``longestStableHold``, whichever
    /// is earlier; nil when nothing is suppressed.
    public func releaseInstant(ofReturnAt returnedAt: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        reuseInstant.map { min($0, returnedAt.adding(clamped: Self.longestStableHold)) }
    }

    /// The link has stayed up ``longestStableHold`` with a return held: it has settled, so the
    /// suppression ends and the penalty drops to the reuse threshold, as if it had decayed there.
    /// The next quick flap then acts at once again, and only a new run of flaps suppresses.
    public mutating func settle(at now: ContinuousClock.Instant) {
        guard suppressing else { return }
        suppressing = false
        penaltyAtLastFlap = min(penalty(at: now), policy.reuseThreshold)
        lastFlap = now
    }

    /// The highest penalty: the one that takes `maximumSuppression` to decay to the reuse threshold.
    private var ceiling: Double {
        let halvings = policy.maximumSuppression.secondsValue / max(policy.halfLife.secondsValue, 1e-9)
        return policy.reuseThreshold * exp2(min(halvings, 60))
    }
}
