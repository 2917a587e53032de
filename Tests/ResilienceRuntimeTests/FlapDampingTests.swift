import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import Testing

/// The damping value alone: instants from one origin, no clock.
struct FlapDampingTests {
    let t0 = ContinuousClock.now

    @Test func oneOrTwoFlapsActAtOnceAndTheThirdInARowIsSuppressed() {
        var damping = FlapDamping(policy: FlapDampingPolicy())
        let first = damping.recordFlap(at: t0)
        let second = damping.recordFlap(at: t0 + .milliseconds(100))
        let third = damping.recordFlap(at: t0 + .milliseconds(200))
        #expect(!first && !second && third)
        #expect(damping.reuseInstant != nil)
    }

    @Test func thePenaltyHalvesEveryHalfLife() {
        var damping = FlapDamping(policy: FlapDampingPolicy(halfLife: .seconds(10)))
        _ = damping.recordFlap(at: t0)
        #expect(abs(damping.penalty(at: t0 + .seconds(10)) - 500) < 0.001)
        #expect(abs(damping.penalty(at: t0 + .seconds(20)) - 250) < 0.001)
    }

    @Test func suppressionEndsAtTheReuseInstantAndNotBefore() throws {
        var damping = FlapDamping(policy: FlapDampingPolicy())
        for i in 0..<5 { _ = damping.recordFlap(at: t0 + .milliseconds(100 * i)) }
        let reuse = try #require(damping.reuseInstant)
        let justBefore = damping.isSuppressed(at: reuse - .milliseconds(10))
        let atReuse = damping.isSuppressed(at: reuse)
        #expect(justBefore && !atReuse)
        #expect(damping.reuseInstant == nil)
    }

    /// However long the storm, suppression outlasts its last flap by at most the maximum.
    @Test(arguments: [10, 200, 10_000])
    func aStormIsSuppressedAtMostTheMaximumAfterItsLastFlap(flaps: Int) throws {
        let policy = FlapDampingPolicy(maximumSuppression: .seconds(30))
        var damping = FlapDamping(policy: policy)
        var last = t0
        for i in 0..<flaps {
            last = t0 + .milliseconds(10 * i)
            _ = damping.recordFlap(at: last)
        }
        let reuse = try #require(damping.reuseInstant)
        #expect(reuse - last <= policy.maximumSuppression + .milliseconds(1))
        let suppressedAfterMaximum = damping.isSuppressed(at: last + policy.maximumSuppression + .milliseconds(1))
        #expect(!suppressedAfterMaximum)
    }

    @Test func offNeverSuppresses() {
        var damping = FlapDamping(policy: .off)
        let suppressed = (0..<1000).map { damping.recordFlap(at: t0 + .milliseconds($0)) }
        #expect(!suppressed.contains(true))
        #expect(damping.flaps == 1000)
    }
}
