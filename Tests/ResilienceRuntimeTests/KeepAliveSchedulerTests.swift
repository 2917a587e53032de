import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct KeepAliveSchedulerTests {
    let clock = ManualClock()
    let batches = AsyncStream<[ServiceID]>.makeStream()

    func makeScheduler() -> KeepAliveScheduler {
        let continuation = batches.continuation
        return KeepAliveScheduler(clock: clock, onDue: { continuation.yield($0) })
    }

    /// Drives the scheduler for `span`: every wake-up refreshes its batch for `lifetime` more.
    func drive(
        _ scheduler: KeepAliveScheduler, for span: Duration, lifetime: Duration,
        expiries: inout [ServiceID: ContinuousClock.Instant]
    ) async -> [(at: ContinuousClock.Instant, batch: [ServiceID])] {
        let end = clock.now + span
        var wakeUps: [(ContinuousClock.Instant, [ServiceID])] = []
        var iterator = batches.stream.makeAsyncIterator()
        while let next = await scheduler.nextWakeUp, next <= end {
            clock.advance(to: next)
            let batch = await iterator.next()!
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
}
