import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import Testing

struct FlowLossThrottleTests {
    let t0 = ContinuousClock.now
    // Default backoff: 1 s × 1.6ⁿ, ±20 %, at most 120 s.
    let backoff = BackoffPolicy()

    @Test func aFirstLossIsReleasedAtOnce() {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 1)
        #expect(throttle.report(["reg", "mwi", "reg"], at: t0) == ["mwi", "reg"])
        #expect(throttle.nextRelease == nil)
    }

    @Test func repeatedLossesWaitTheGrowingBackoff() throws {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 2)
        var now = t0
        #expect(throttle.report(["reg"], at: now) == ["reg"])
        for losses in 2...8 {
            #expect(throttle.report(["reg"], at: now).isEmpty, "loss \(losses) released at once")
            let release = try #require(throttle.nextRelease)
            #expect(backoff.delayBounds(afterFailures: losses - 1).contains(release - now), "loss \(losses)")
            #expect(throttle.releaseDue(at: release - .milliseconds(1)).isEmpty)
            #expect(throttle.releaseDue(at: release) == ["reg"])
            now = release
        }
    }

    @Test func lossesWaitingTogetherAreReleasedTogether() throws {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 3)
        #expect(throttle.report(["reg", "mwi"], at: t0) == ["mwi", "reg"])
        #expect(throttle.report(["reg"], at: t0 + .milliseconds(100)).isEmpty)
        #expect(throttle.report(["mwi"], at: t0 + .milliseconds(200)).isEmpty)
        // A loss of a service already waiting adds no second release.
        #expect(throttle.report(["reg"], at: t0 + .milliseconds(300)).isEmpty)
        #expect(throttle.waitingServices == ["mwi", "reg"])
        // Both wait at most 1.2 s (initial + 20 %) from their loss.
        #expect(throttle.releaseDue(at: t0 + .seconds(2)) == ["mwi", "reg"])
        #expect(throttle.nextRelease == nil)
    }

    @Test func aHeldLossIsMootForEachServiceThatSucceededAfterIt() {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 5)
        #expect(throttle.report(["reg"], at: t0) == ["reg"])
        #expect(throttle.report(["reg", "mwi"], at: t0 + .milliseconds(500)).isEmpty)
        // The register's retry succeeded while the report waited; mwi succeeded only before it.
        let meanwhile: [ServiceID: ContinuousClock.Instant] = [
            "reg": t0 + .milliseconds(900), "mwi": t0 + .milliseconds(400),
        ]
        #expect(throttle.releaseDue(at: t0 + .seconds(2), succeeded: meanwhile) == ["mwi"])
        // A report none of whose services remain releases nothing.
        #expect(throttle.report(["reg"], at: t0 + .seconds(3)).isEmpty)
        #expect(throttle.releaseDue(at: t0 + .seconds(10), succeeded: ["reg": t0 + .seconds(4)]).isEmpty)
        #expect(throttle.nextRelease == nil)
        // A loss reported after the success stands.
        #expect(throttle.report(["reg"], at: t0 + .seconds(11)).isEmpty)
        #expect(throttle.releaseDue(at: t0 + .seconds(30), succeeded: ["reg": t0 + .seconds(4)]) == ["reg"])
    }

    @Test func theCountResetsAfterTheMaximumWithoutALoss() {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 4)
        #expect(throttle.report(["reg"], at: t0) == ["reg"])
        #expect(throttle.report(["reg"], at: t0 + .seconds(119)).isEmpty)
        _ = throttle.releaseDue(at: t0 + .seconds(200))
        #expect(throttle.report(["reg"], at: t0 + .seconds(119 + 120)) == ["reg"])
    }

    @Test func theSameSeedDrawsTheSameDelays() {
        func delays(seed: UInt64) -> [ContinuousClock.Instant?] {
            var throttle = FlowLossThrottle(backoff: backoff, randomSeed: seed)
            return (0..<5).map { i in
                let now = t0 + .seconds(10 * i)
                _ = throttle.releaseDue(at: now)
                _ = throttle.report(["reg"], at: now)
                return throttle.nextRelease
            }
        }
        #expect(delays(seed: 9) == delays(seed: 9))
    }
}

struct FlowLossThrottleBatchTests {
    let t0 = ContinuousClock.now
    let backoff = BackoffPolicy()

    @Test func aReportIsNeverSplitWhenOneOfItsServicesMustWait() throws {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 5)
        // The registration lost its flow a moment ago; its subscriptions were not on it then.
        #expect(throttle.report(["a.reg"], at: t0) == ["a.reg"])
        // The next loss names all three: none goes before the registration.
        #expect(throttle.report(["a.reg", "a.sub.reg", "a.sub.mwi"], at: t0 + .milliseconds(500)).isEmpty)
        #expect(throttle.waitingServices == ["a.reg", "a.sub.mwi", "a.sub.reg"])
        let release = try #require(throttle.nextRelease)
        #expect(throttle.releaseDue(at: release) == ["a.reg", "a.sub.mwi", "a.sub.reg"])
    }

    @Test func aReportThatMustWaitLongerTakesTheWaitingGroupAlong() throws {
        var throttle = FlowLossThrottle(backoff: backoff, randomSeed: 6)
        var now = t0
        // Three quick losses of the subscription alone: its next wait is ~1.6 s.
        for _ in 0..<3 {
            _ = throttle.report(["a.sub"], at: now)
            now = throttle.nextRelease ?? now
            _ = throttle.releaseDue(at: now)
        }
        #expect(throttle.report(["a.reg"], at: now) == ["a.reg"])
        #expect(throttle.report(["a.reg"], at: now + .milliseconds(10)).isEmpty)
        let registrationAlone = try #require(throttle.nextRelease)
        #expect(throttle.report(["a.reg", "a.sub"], at: now + .milliseconds(20)).isEmpty)
        let together = try #require(throttle.nextRelease)
        #expect(together >= registrationAlone)
        #expect(throttle.releaseDue(at: together - .milliseconds(1)).isEmpty)
        #expect(throttle.releaseDue(at: together) == ["a.reg", "a.sub"])
    }
}
