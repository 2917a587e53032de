import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// Values from a hostile or broken server (`Retry-After: 9223372036854775807`, `Retry-After: 0`,
/// an expiry of zero or of centuries) neither trap the runtime nor make it repeat without a floor.
@Suite(.timeLimit(.minutes(3)))
struct HostileValueTests {
    let clock = ManualClock()
    let plugin = RecordingPlugin()

    /// A 503 with the largest Retry-After a registrar can write: the manager lives on, the retry
    /// comes within the backoff cap (120 s ± 20 %), and it succeeds.
    @Test(arguments: [Duration.seconds(Int64.max), .seconds(Int64.max / 2), TimeBounds.longest * 3])
    func aHugeRetryAfterIsCappedAndTheManagerLivesOn(retryAfter: Duration) async throws {
        let source = ScriptedNetworkSource(clock: clock)
        plugin.program([.fail(PluginError("503", retryAfter: retryAfter)), .succeed], for: "reg")
        let manager = ResilienceManager(
            source: source, policy: Policy(holdDown: .zero), plugins: [plugin], clock: clock,
            configuration: .init(randomSeed: 3), logger: quiet, decide: testDecide)
        await manager.register(ClientService(id: "reg", kind: .registration))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        let start = clock.now
        await source.lose(.noCarrier)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        await source.restore()
        let retry = try #require(
            try await events.wait { $0.contains { $0.action?.isRetrying == true } }
                .compactMap(\.action).first(where: \.isRetrying))
        let retryAt = try #require(retry.retryAt)
        let cap = BackoffPolicy().maximum * 1.2
        #expect(retryAt > start && retryAt - start <= cap, "retry at \(retryAt - start), cap \(cap)")
        clock.advance(to: retryAt)
        try await events.wait { $0.contains { $0.action?.isSucceeded == true } }
        #expect(plugin.starts.map(\.attempt) == [1, 2])
        #expect(await manager.status().actions.isEmpty)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    /// `Retry-After: 0` (or negative) waits the backoff, never less than the runtime's floor,
    /// and a policy with `initial: 0` still waits the floor.
    @Test(arguments: [Duration.zero, .seconds(-5)])
    func aZeroRetryAfterWaitsTheBackoff(retryAfter: Duration) {
        var random = SplitMix64(seed: 1)
        let policy = BackoffPolicy()
        for failures in 1...20 {
            let delay = policy.retryDelay(afterFailures: failures, retryAfter: retryAfter, using: &random)
            #expect(policy.delayBounds(afterFailures: failures).contains(delay))
        }
        let zero = BackoffPolicy(initial: .zero, jitter: 0)
        #expect(zero.retryDelay(afterFailures: 1, retryAfter: .zero, using: &random) == BackoffPolicy.minimumDelay)
    }

    /// A Retry-After longer than the backoff but under the cap is honoured exactly.
    @Test func aModerateRetryAfterIsAFloorUnderTheBackoff() {
        var random = SplitMix64(seed: 1)
        let policy = BackoffPolicy()
        #expect(policy.retryDelay(afterFailures: 1, retryAfter: .seconds(30), using: &random) == .seconds(30))
        #expect(policy.retryDelay(afterFailures: 1, retryAfter: .seconds(1_000_000), using: &random) == .seconds(120))
    }

    /// Outside counts of seconds become durations within the runtime's bounds.
    @Test func outsideSecondsAreClamped() {
        #expect(Duration.clampedSeconds(-1) == .zero)
        #expect(Duration.clampedSeconds(Int64.max) == TimeBounds.longest)
        #expect(Duration.clampedSeconds(UInt64.max) == TimeBounds.longest)
        #expect(Duration.clampedSeconds(600) == .seconds(600))
        let now = clock.now
        #expect(now.adding(clamped: .seconds(Int64.max)) == now + TimeBounds.longest)
        #expect(TimeBounds.Clamped(.seconds(Int64.max), into: .zero ... .seconds(5)).wasClamped)
    }

    /// A registrar granting 0 s, 5 s or a lifetime below the refresh margin: each wake-up
    /// refreshes and the new grant is as short again, yet over 15 s the scheduler fires a handful
    /// of refreshes, not hundreds (the half-lifetime and minimum-interval floors).
    @Test(arguments: [Duration.zero, .seconds(5), .seconds(20), .seconds(-1)])
    func aShortGrantedLifetimeGivesABoundedRefreshCount(lifetime: Duration) async {
        let refreshes = AsyncStream<[ServiceID]>.makeStream()
        let scheduler = WakeUpScheduler(
            clock: clock, configuration: .init(randomSeed: 5),
            onDue: { refresh, _ in if !refresh.isEmpty { refreshes.continuation.yield(refresh) } })
        let end = clock.now + .seconds(15)
        await scheduler.setExpiry(clock.now.adding(clamped: lifetime), for: "reg")
        var iterator = refreshes.stream.makeAsyncIterator()
        var count = 0
        while count < 1000 {
            // No armed timer means the last one fired at once (a refresh due now): its batch waits
            // in the stream. Otherwise move the clock to it, unless it is due already.
            if let next = await scheduler.nextWakeUp {
                guard next <= end else { break }
                if next > clock.now {
                    await clock.waitForSleepers(count: 1)
                    clock.advance(to: next)
                }
            }
            _ = await iterator.next()
            count += 1
            await scheduler.setExpiry(clock.now.adding(clamped: lifetime), for: "reg")
        }
        // 0 s and −1 s: at once, then every 10 s (2); 5 s: 2.5 s, 12.5 s (2); 20 s: 10 s (1).
        #expect(count >= 1 && count <= 3, "\(count) refreshes in 15 s for a \(lifetime) lifetime")
    }

    /// An expiry centuries away, or a keep-alive interval of zero, neither traps nor spins.
    @Test func hugeExpiriesAndZeroIntervalsAreClamped() async throws {
        let scheduler = WakeUpScheduler(clock: clock, configuration: .init(randomSeed: 5), onDue: { _, _ in })
        await scheduler.setExpiry(clock.now + .seconds(Int64.max), for: "reg")
        let refresh = try #require(await scheduler.nextWakeUp)
        #expect(refresh - clock.now <= TimeBounds.longest)
        await scheduler.setFlowPingInterval(.zero, for: "flow")
        let ping = try #require(await scheduler.nextPing(of: "flow"))
        #expect(ping - clock.now >= .milliseconds(800), "a zero interval is raised to the 1 s floor")
    }
}
