import Logging
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// RFC 8599 in the runtime: suspended with a push token is asleep (no refresh, no ping, no
/// timer), a push wakes the account for the policy's window, then it sleeps again.
@Suite(.timeLimit(.minutes(3)))
struct PushSleepTests {
    let clock = ManualClock()
    let plugin = RecordingPlugin(id: "sip", actions: Set(ActionKind.builtIn))

    /// A registration that expires in an hour and pings its flow every 30 s.
    func registration(_ account: String) -> ClientService {
        ClientService(
            id: ServiceID("\(account).reg"), kind: .registration, account: account,
            expires: clock.now + .seconds(3600), flowPingInterval: .seconds(30))
    }

    func start(pushAccounts: [String], window: Duration = .seconds(10)) async throws -> (
        ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>
    ) {
        let manager = ResilienceManager(
            source: ScriptedNetworkSource(clock: clock), policy: Policy(holdDown: .zero, pushWakeWindow: window),
            plugins: [plugin], appState: .background, clock: clock, configuration: .init(randomSeed: 5), logger: quiet)
        await manager.register(registration("alice"))
        for account in pushAccounts { await manager.setPushAvailable(true, for: account) }
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        return (manager, events, group, run)
    }

    func stop(_ group: ServiceGroup, _ run: Task<Void, any Error>) async throws {
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func suspendedWithAPushTokenReleasesTheFlowAndArmsNoWakeUp() async throws {
        let (manager, events, group, run) = try await start(pushAccounts: ["alice"])
        #expect(await manager.status().nextWakeUp != nil)
        await manager.setAppState(.suspended)
        try await events.wait {
            $0.contains { $0.action?.action.kind == .releaseFlow && $0.action?.isSucceeded == true }
        }
        #expect(await manager.status().nextWakeUp == nil)
        // An hour later (past the expiry) nothing was due: no refresh, no ping was decided.
        clock.advance(by: .seconds(3600))
        await manager.pushTokenChanged()  // a trigger to wait for: decided after anything due
        try await events.wait { $0.contains { $0.decision?.trigger == .pushTokenChanged } }
        #expect(!events.recorded.contains { if case .refreshDue = $0.decision?.trigger { true } else { false } })
        #expect(!events.recorded.contains { if case .flowPingDue = $0.decision?.trigger { true } else { false } })
        #expect(plugin.starts.map(\.action.kind).filter { $0 != .register } == [.releaseFlow])
        try await stop(group, run)
    }

    /// The "no wake-up" while asleep, counted where the timers live: once the flow is
    /// released, the manager (scheduler, hold-down, flow-loss, push-window and action timers)
    /// holds no sleeper on its clock, and ten simulated minutes fire none.
    @Test func anAsleepAccountArmsNoTimerAtAllForTenMinutes() async throws {
        let (manager, events, group, run) = try await start(pushAccounts: ["alice"])
        await manager.setAppState(.suspended)
        try await events.wait {
            $0.contains { $0.action?.action.kind == .releaseFlow && $0.action?.isSucceeded == true }
        }
        // The release's own timeout timer is cancelled when it succeeds: bounded wait for that.
        for _ in 0..<500 where clock.sleeperCount > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(clock.sleeperCount == 0, "an asleep account keeps \(clock.sleeperCount) timer(s) armed")
        let wakeUpsBefore = clock.wakeUps
        for _ in 0..<60 { clock.advance(by: .seconds(10)) }
        #expect(clock.wakeUps == wakeUpsBefore)
        #expect(clock.sleeperCount == 0)
        #expect(plugin.starts.map(\.action.kind).filter { $0 != .register } == [.releaseFlow])
        try await stop(group, run)
    }

    /// Without a token the flow stays; its wake-ups follow the rules (`SuspendedWakeUpTests`):
    /// the default policy decides nothing for them suspended, so none is armed.
    @Test func suspendedWithoutAPushTokenKeepsItsFlowAndArmsNoUselessWakeUp() async throws {
        let (manager, events, group, run) = try await start(pushAccounts: [])
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.suspending) } }
        #expect(await manager.status().nextWakeUp == nil)
        #expect(!plugin.starts.contains { $0.action.kind == .releaseFlow })
        try await stop(group, run)
    }

    @Test func aPushRegistersAtOnceWakesForTheWindowThenSleepsAgain() async throws {
        let (manager, events, group, run) = try await start(pushAccounts: ["alice"])
        await manager.setAppState(.suspended)
        try await events.wait {
            $0.contains { $0.action?.action.kind == .releaseFlow && $0.action?.isSucceeded == true }
        }
        let registersBefore = plugin.starts.filter { $0.action.kind == .register }.count

        await manager.push(try Push(account: "alice", kind: .call, payload: "call-1"))
        try await events.wait { items in
            items.contains {
                $0.action?.action.kind == .register && $0.action?.action.trigger.name == "push.received.call"
                    && $0.action?.isSucceeded == true
            }
        }
        #expect(plugin.starts.filter { $0.action.kind == .register }.count == registersBefore + 1)
        #expect(await manager.wokenAccounts == ["alice"])
        // Awake in the window: its refresh and ping are armed again.
        #expect(await manager.status().nextWakeUp != nil)

        clock.advance(by: .seconds(10))
        try await events.wait { items in
            items.filter { $0.action?.action.kind == .releaseFlow && $0.action?.isSucceeded == true }.count == 2
        }
        #expect(events.recorded.contains { $0.decision?.trigger == .pushWindowEnded(account: "alice") })
        #expect(await manager.wokenAccounts.isEmpty)
        #expect(await manager.status().nextWakeUp == nil)
        try await stop(group, run)
    }

    @Test func aCallInTheWindowKeepsTheAccountAwakeUntilItIsOver() async throws {
        let (manager, events, group, run) = try await start(pushAccounts: ["alice"])
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.action?.action.kind == .releaseFlow } }
        await manager.push(try Push(account: "alice"))
        try await events.wait { $0.contains { $0.decision?.trigger.name == "push.received.call" } }
        await manager.register(ClientService(id: "alice.call", kind: .call(.incoming, .active), account: "alice"))

        clock.advance(by: .seconds(10))  // the window ends with the call running: extended
        clock.advance(by: .seconds(10))
        #expect(await manager.wokenAccounts == ["alice"])
        #expect(!events.recorded.contains { $0.decision?.trigger == .pushWindowEnded(account: "alice") })

        await manager.remove("alice.call")
        clock.advance(by: .seconds(10))
        try await events.wait { $0.contains { $0.decision?.trigger == .pushWindowEnded(account: "alice") } }
        #expect(await manager.status().nextWakeUp == nil)
        try await stop(group, run)
    }

    @Test func aPushInTheForegroundRegistersAndDecidesNoWindowEnd() async throws {
        let (manager, events, group, run) = try await start(pushAccounts: ["alice"])
        await manager.setAppState(.foreground)
        await manager.push(try Push(account: "alice", kind: .refresh))
        try await events.wait {
            $0.contains { $0.action?.action.trigger.name == "push.received.refresh" && $0.action?.isSucceeded == true }
        }
        clock.advance(by: .seconds(10))
        await manager.pushTokenChanged()
        try await events.wait { $0.contains { $0.decision?.trigger == .pushTokenChanged } }
        #expect(!events.recorded.contains { $0.decision?.trigger == .pushWindowEnded(account: "alice") })
        try await stop(group, run)
    }
}

/// The scheduler's half of sleep: a sleeping service arms nothing and wakes with its refresh.
struct WakeUpSchedulerSleepTests {
    @Test func aSleepingServiceArmsNoTimerAndWakesWithItsRefreshAndAFreshPing() async {
        let clock = ManualClock()
        let scheduler = WakeUpScheduler(clock: clock, appState: .background, onDue: { _, _ in })
        await scheduler.setExpiry(clock.now + .seconds(3600), for: "a.reg")
        await scheduler.setFlowPingInterval(.seconds(30), for: "a.reg")
        #expect(await scheduler.nextWakeUp != nil)
        await scheduler.setAsleep(["a.reg"])
        #expect(await scheduler.nextWakeUp == nil)
        // Reports while asleep are kept, not armed.
        await scheduler.setExpiry(clock.now + .seconds(7200), for: "a.reg")
        await scheduler.flowActive("a.reg")
        #expect(await scheduler.nextWakeUp == nil)
        #expect(await scheduler.sleepingServices == ["a.reg"])
        await scheduler.setAsleep([])
        #expect(await scheduler.nextWakeUp != nil)
        #expect(await scheduler.nextPing(of: "a.reg") != nil)
        #expect(await scheduler.wakeUps == 0)
    }
}

/// Each duty sleeps alone: a sleeping ping leaves the refresh armed and the other way round.
@Suite(.timeLimit(.minutes(1)))
struct WakeUpSchedulerDutySleepTests {
    @Test func aSleepingPingLeavesTheRefreshArmedAndASleepingRefreshLeavesThePing() async {
        let clock = ManualClock()
        let (refreshes, reported) = AsyncStream<[ServiceID]>.makeStream()
        let scheduler = WakeUpScheduler(
            clock: clock, appState: .suspended, onDue: { refresh, _ in if !refresh.isEmpty { reported.yield(refresh) } }
        )
        let refreshAt = clock.now + .seconds(1800 - 30)
        await scheduler.setExpiry(clock.now + .seconds(1800), for: "a.reg")
        await scheduler.setFlowPingInterval(.seconds(30), for: "a.reg")

        await scheduler.setAsleep(refreshes: [], pings: ["a.reg"])
        #expect(await scheduler.nextPing(of: "a.reg") == nil)
        #expect(await scheduler.nextWakeUp == refreshAt)
        await scheduler.flowActive("a.reg")  // a sleeping ping is not re-armed by traffic
        #expect(await scheduler.nextPing(of: "a.reg") == nil)

        await scheduler.setAsleep(refreshes: ["a.reg"], pings: [])
        let ping = await scheduler.nextPing(of: "a.reg")
        #expect(ping != nil)
        #expect(await scheduler.nextWakeUp != refreshAt)
        #expect(await scheduler.sleepingServices.isEmpty)

        // Both asleep past the refresh instant, then the refresh wakes: armed at once, not lost.
        await scheduler.setAsleep(["a.reg"])
        #expect(await scheduler.nextWakeUp == nil)
        clock.advance(by: .seconds(1800))
        await scheduler.setAsleep(refreshes: [], pings: ["a.reg"])
        var reports = refreshes.makeAsyncIterator()
        #expect(await reports.next() == ["a.reg"])
        #expect(clock.now == refreshAt + .seconds(30))
    }
}
