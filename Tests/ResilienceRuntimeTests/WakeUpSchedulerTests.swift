import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(3)))
struct WakeUpSchedulerTests {
    let clock = ManualClock()
    let batches = AsyncStream<[ServiceID]>.makeStream()
    let wakeUps = AsyncStream<WakeUp>.makeStream()

    struct WakeUp: Hashable {
        var refresh: [ServiceID]
        var ping: [ServiceID]
    }

    /// Reports refresh batches on `batches` and every wake-up on `wakeUps`.
    func makeScheduler(seed: UInt64 = 11, appState: AppState = .foreground) -> WakeUpScheduler {
        let batches = self.batches.continuation
        let wakeUps = self.wakeUps.continuation
        return WakeUpScheduler(
            clock: clock, appState: appState, configuration: .init(randomSeed: seed),
            onDue: { refresh, ping in
                if !refresh.isEmpty { batches.yield(refresh) }
                wakeUps.yield(WakeUp(refresh: refresh, ping: ping))
            })
    }

    /// Drives the scheduler for `span`: every wake-up refreshes its batch for `lifetime` more.
    func drive(
        _ scheduler: WakeUpScheduler, for span: Duration, lifetime: Duration,
        expiries: inout [ServiceID: ContinuousClock.Instant]
    ) async -> [(at: ContinuousClock.Instant, batch: [ServiceID])] {
        let end = clock.now + span
        var wakeUps: [(ContinuousClock.Instant, [ServiceID])] = []
        var iterator = batches.stream.makeAsyncIterator()
        while let next = await scheduler.nextWakeUp, next <= end {
            // The timer's task must be asleep before the clock passes its deadline, or it returns
            // at once without counting as a wake-up.
            await clock.waitForSleepers(count: 1)
            clock.advance(to: next)
            // Nil once the test is cancelled (its time limit): fail, never trap the whole run.
            guard let batch = await iterator.next() else {
                Issue.record("no refresh batch at \(next): the test was cancelled")
                break
            }
            wakeUps.append((clock.now, batch))
            for id in batch {
                #expect(clock.now < expiries[id]!, "\(id) refreshed after it expired")
                expiries[id] = clock.now + lifetime
                await scheduler.setExpiry(expiries[id], for: id)
            }
        }
        clock.advance(to: end)
        return wakeUps
    }

    @Test func hundredBackgroundServicesWithStaggeredExpiriesShareOneWakeUpPerWindow() async {
        let scheduler = makeScheduler()
        await scheduler.setAppState(.background)
        var expiries: [ServiceID: ContinuousClock.Instant] = [:]
        for i in 0..<100 {
            let id = ServiceID("svc\(i)")
            expiries[id] = clock.now + .seconds(900 + 37 * i)  // spread over an hour
            await scheduler.setExpiry(expiries[id], for: id)
        }
        let wakeUps = await drive(scheduler, for: .seconds(6 * 3600), lifetime: .seconds(3600), expiries: &expiries)
        for (earlier, later) in zip(wakeUps, wakeUps.dropFirst()) {
            #expect(later.at - earlier.at >= .seconds(600))
        }
        #expect(wakeUps.allSatisfy { !$0.batch.isEmpty })
        #expect(await scheduler.wakeUps == wakeUps.count)
        // At most one wake-up per 600 s window: 6 h → 36, against 600 for one timer per service.
        #expect(wakeUps.count <= 36)
        #expect(clock.wakeUps == wakeUps.count)
    }

    @Test func foregroundWakeUpsBatchEverythingDueInsideTheCoalescingWindow() async {
        let scheduler = makeScheduler()
        var expiries: [ServiceID: ContinuousClock.Instant] = [:]
        for i in 0..<100 {
            let id = ServiceID("svc\(i)")
            expiries[id] = clock.now + .seconds(120) + .milliseconds(500 * i)  // 50 s of staggering
            await scheduler.setExpiry(expiries[id], for: id)
        }
        let wakeUps = await drive(scheduler, for: .seconds(200), lifetime: .seconds(3600), expiries: &expiries)
        #expect(wakeUps.map(\.batch.count).reduce(0, +) == 100)
        #expect(wakeUps.count == 5)  // 50 s of deadlines in windows of 10 s
    }

    @Test func noServicesMeansNoTimerAndNoWakeUps() async {
        let scheduler = makeScheduler()
        await scheduler.setAppState(.background)
        #expect(await scheduler.nextWakeUp == nil)
        clock.advance(by: .seconds(24 * 3600))
        #expect(clock.sleeperCount == 0)
        #expect(clock.wakeUps == 0)
        await scheduler.setExpiry(clock.now + .seconds(3600), for: "reg")
        #expect(await scheduler.nextWakeUp != nil)
        await scheduler.remove("reg")
        #expect(await scheduler.nextWakeUp == nil)
        clock.advance(by: .seconds(24 * 3600))
        #expect(await scheduler.wakeUps == 0)
    }

    @Test func pingsAreArmedAtEightyToHundredPercentOfTheInterval() async throws {
        let scheduler = makeScheduler()
        let interval = Duration.seconds(120)
        var offsets: [Duration] = []
        for i in 0..<50 {
            let id = ServiceID("flow\(i)")
            await scheduler.setFlowPingInterval(interval, for: id)
            let at = try #require(await scheduler.nextPing(of: id))
            offsets.append(at - clock.now)
        }
        #expect(offsets.allSatisfy { $0 >= .seconds(96) && $0 <= .seconds(120) })
        // Jittered, not a constant: the 50 draws are not all the same.
        #expect(Set(offsets).count > 1)
        await scheduler.setFlowPingInterval(nil, for: "flow0")
        #expect(await scheduler.nextPing(of: "flow0") == nil)
    }

    @Test func eachPingWakeUpRearmsTheNextPingFromTheFireTime() async throws {
        let scheduler = makeScheduler()
        await scheduler.setFlowPingInterval(.seconds(30), for: "reg")
        var iterator = wakeUps.stream.makeAsyncIterator()
        var fired: [ContinuousClock.Instant] = []
        for _ in 0..<5 {
            let next = try #require(await scheduler.nextWakeUp)
            clock.advance(to: next)
            #expect(await iterator.next() == WakeUp(refresh: [], ping: ["reg"]))
            fired.append(clock.now)
            let rearmed = try #require(await scheduler.nextPing(of: "reg"))
            #expect(rearmed - clock.now >= .seconds(24) && rearmed - clock.now <= .seconds(30))
        }
        for (earlier, later) in zip(fired, fired.dropFirst()) {
            #expect(later - earlier >= .seconds(24) && later - earlier <= .seconds(30))
        }
        #expect(await scheduler.wakeUps == 5)
        await scheduler.remove("reg")
        #expect(await scheduler.nextWakeUp == nil)
    }

    @Test func backgroundPingsShareTheMinimumIntervalWithRefreshes() async throws {
        let scheduler = makeScheduler()
        await scheduler.setAppState(.background)
        await scheduler.setFlowPingInterval(.seconds(120), for: "flow")
        await scheduler.setExpiry(clock.now + .seconds(900), for: "reg")
        var iterator = wakeUps.stream.makeAsyncIterator()
        var fired: [(ContinuousClock.Instant, WakeUp)] = []
        let end = clock.now + .seconds(3600)
        while let next = await scheduler.nextWakeUp, next <= end, fired.count < 20 {
            clock.advance(to: next)
            let wakeUp = try #require(await iterator.next())
            fired.append((clock.now, wakeUp))
            if wakeUp.refresh.contains("reg") { await scheduler.setExpiry(clock.now + .seconds(900), for: "reg") }
        }
        for (earlier, later) in zip(fired, fired.dropFirst()) {
            #expect(later.0 - earlier.0 >= .seconds(600))
        }
        // One ping per 600 s window at most, against 30 for a 120 s timer of its own.
        #expect(fired.count <= 7)
        #expect(fired.allSatisfy { !$0.1.refresh.isEmpty || !$0.1.ping.isEmpty })
        #expect(fired.contains { $0.1.ping == ["flow"] })
    }

    @Test func aServiceRefreshedInAWakeUpIsNotPingedInIt() async throws {
        let scheduler = makeScheduler()
        // Pings at 8–10 s; reg's refresh at 8 s (half its 16 s lifetime, the floor above
        // `expires − margin`): the first wake-up (at 8 s) takes both pings (inside its 10 s
        // coalescing window) and the refresh.
        await scheduler.setFlowPingInterval(.seconds(10), for: "reg")
        await scheduler.setFlowPingInterval(.seconds(10), for: "other")
        await scheduler.setExpiry(clock.now + .seconds(16), for: "reg")
        var iterator = wakeUps.stream.makeAsyncIterator()
        let next = try #require(await scheduler.nextWakeUp)
        clock.advance(to: next)
        #expect(try #require(await iterator.next()) == WakeUp(refresh: ["reg"], ping: ["other"]))
        let rearmed = try #require(await scheduler.nextPing(of: "reg"))
        #expect(rearmed - clock.now >= .seconds(8) && rearmed - clock.now <= .seconds(10))
    }

    @Test func servicesWithoutIntervalsCauseNoPingWakeUps() async {
        let scheduler = makeScheduler()
        await scheduler.setFlowPingInterval(nil, for: "reg")
        #expect(await scheduler.nextWakeUp == nil)
        clock.advance(by: .seconds(24 * 3600))
        #expect(await scheduler.wakeUps == 0)
        #expect(clock.wakeUps == 0)
    }

    @Test(arguments: [AppState.background, .suspended])
    func aSchedulerStartedAwayFromTheForegroundSendsNoPingAtTheForegroundInterval(state: AppState) async throws {
        let start = clock.now
        let scheduler = makeScheduler(appState: state)
        await scheduler.setFlowPingInterval(.seconds(30), for: "reg")
        let first = try #require(await scheduler.nextWakeUp)
        #expect(first >= start + .seconds(600))
        // Against the foreground, where the same interval pings at 24–30 s.
        await scheduler.setAppState(.foreground)
        let foreground = try #require(await scheduler.nextWakeUp)
        #expect(foreground <= start + .seconds(30))
    }

    @Test func leavingTheForegroundPushesThePendingPingToTheMinimumInterval() async throws {
        let scheduler = makeScheduler()
        await scheduler.setFlowPingInterval(.seconds(30), for: "reg")
        clock.advance(by: .seconds(20))
        let left = clock.now
        await scheduler.setAppState(.background)
        #expect(try #require(await scheduler.nextWakeUp) >= left + .seconds(600))
        // A refresh keeps its own deadline: a registration must not lapse for a quiet background.
        await scheduler.setExpiry(left + .seconds(130), for: "reg")
        #expect(await scheduler.nextWakeUp == left + .seconds(100))
    }

    @Test func trafficOnAFlowRearmsItsPingFromThen() async throws {
        let scheduler = makeScheduler()
        await scheduler.setFlowPingInterval(.seconds(30), for: "reg")
        let before = try #require(await scheduler.nextPing(of: "reg"))
        clock.advance(by: .seconds(20))
        await scheduler.flowActive("reg")
        let after = try #require(await scheduler.nextPing(of: "reg"))
        #expect(after - clock.now >= .seconds(24) && after - clock.now <= .seconds(30))
        #expect(after > before)
        // No interval, no ping: traffic on a flow without pings arms nothing.
        await scheduler.flowActive("other")
        #expect(await scheduler.nextPing(of: "other") == nil)
    }
}
