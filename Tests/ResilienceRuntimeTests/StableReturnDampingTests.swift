import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// Issue 22, point 5: damping keeps a storm cheap, but a return held by it waits at most
/// `FlapDamping.longestStableHold` (5 s) once the link stays up, not until the penalty decays
/// (`netres-bench sip-recovery` saw 16 of 50 returns held 15.7–17.0 s with the default policy).
struct StableReturnDampingTests {
    @Test func aHeldReturnIsReleasedAtTheEarlierOfTheReuseInstantAndFiveStableSeconds() throws {
        var damping = FlapDamping(policy: FlapDampingPolicy())
        let start = ContinuousClock.now
        _ = damping.recordFlap(at: start)
        _ = damping.recordFlap(at: start)
        let suppressed = damping.recordFlap(at: start)
        #expect(suppressed, "the third quick flap of the default policy suppresses")
        let reuse = try #require(damping.reuseInstant)
        #expect(reuse > start + .seconds(15), "the penalty alone would hold the return for \(reuse - start)")
        #expect(damping.releaseInstant(ofReturnAt: start + .seconds(3)) == start + .seconds(8))
        #expect(damping.releaseInstant(ofReturnAt: reuse) == reuse, "never later than the penalty's own end")
        damping.settle(at: start + .seconds(8))
        let stillSuppressed = damping.isSuppressed(at: start + .seconds(8))
        #expect(!stillSuppressed, "settled: the suppression is over")
        let nextFlap = damping.recordFlap(at: start + .seconds(9))
        #expect(!nextFlap, "one flap after settling acts at once (penalty \(damping.penalty(at: start + .seconds(9))))")
        var undamped = FlapDamping(policy: .off)
        let undampedSuppressed = undamped.recordFlap(at: start)
        #expect(!undampedSuppressed)
        #expect(undamped.releaseInstant(ofReturnAt: start) == nil)
    }
}

extension ManagerDampingTests {
    /// Three quick flaps suppress (default policy: 3 × 1000 ≥ 2500) and the third return is held;
    /// the link then stays up: the return is decided 5 s after it came, with one REGISTER, where
    /// the penalty (3000 decaying to 750 with a 10 s half-life) would have held it 20 s; the
    /// damping has settled then, so the next flap's return acts at once.
    @Test func aReturnHeldByDampingIsDecidedFiveSecondsAfterTheLinkSettled() async throws {
        let (manager, events, group, run) = try await start()
        for round in 1...3 {
            await source.lose(.adminDown)
            try await events.wait { $0.filter(\.isNetworkProcessed).count == 2 * round - 1 }
            await source.restore()
            try await events.wait { $0.filter(\.isNetworkProcessed).count == 2 * round }
        }
        let returned = clock.now
        let held = try #require(await manager.status().damping.networkHeldUntil, "the third return is held")
        #expect(held == returned + FlapDamping.longestStableHold)
        let registersBefore = sip.starts.filter { $0.action.kind == .register }.count
        clock.advance(to: held)
        try await events.wait { $0.contains { $0.damping?.released == true } }
        try await events.wait { items in
            items.compactMap(\.action).contains { $0.isSucceeded && $0.action.kind == .register && $0.at >= held }
        }
        #expect(sip.starts.filter { $0.action.kind == .register }.count == registersBefore + 1)
        #expect(await manager.status().damping.networkHeldUntil == nil)
        // Settled: the next flap's return is acted on at once, not held again.
        let processed = events.recorded.filter(\.isNetworkProcessed).count
        await source.lose(.adminDown)
        try await events.wait { $0.filter(\.isNetworkProcessed).count == processed + 1 }
        await source.restore()
        try await events.wait { $0.filter(\.isNetworkProcessed).count == processed + 2 }
        #expect(await manager.status().damping.networkHeldUntil == nil, "the return after settling is not held")
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
