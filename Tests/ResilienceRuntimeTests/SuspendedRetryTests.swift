import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// A suspended client wakes for nothing but a push: a registration retry begun in the
/// foreground arms no timer and reaches no plugin while the app is suspended, and runs at once
/// when the app wakes; a push-woken account's retries go on while suspended.
@Suite(.timeLimit(.minutes(3)))
struct SuspendedRetryTests {
    let clock = ManualClock()
    let plugin = RecordingPlugin(id: "sip", actions: Set(ActionKind.builtIn))
    static let unavailable = PluginError("503 Service Unavailable")

    /// A registration a day from its expiry: no wake-up decision refreshes it, so what runs after
    /// one is the held retry itself.
    func registration(_ account: String) -> ClientService {
        ClientService(
            id: ServiceID("\(account).reg"), kind: .registration, account: account,
            expires: clock.now + .seconds(86_400))
    }

    func attempts(_ service: ServiceID) -> [Int] {
        plugin.starts.filter { $0.action.service == service }.map(\.attempt)
    }

    /// A foreground manager whose accounts' first REGISTER fails (the registrar answers 503),
    /// once each account's retry waits in its backoff.
    func start(_ accounts: [String]) async throws -> (
        ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>
    ) {
        let manager = ResilienceManager(
            source: ScriptedNetworkSource(clock: clock), policy: Policy(holdDown: .zero, flapDamping: .off),
            plugins: [plugin],
            appState: .foreground, clock: clock, configuration: .init(randomSeed: 7), logger: quiet)
        for account in accounts {
            plugin.program([.fail(Self.unavailable), .succeed], for: ServiceID("\(account).reg"))
            await manager.register(registration(account))
        }
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait(count: accounts.count, "each first REGISTER in its backoff") {
            $0.action?.isRetrying == true && $0.action?.retryAt != nil
        }
        return (manager, events, group, run)
    }

    /// Waits (bounded) until no timer is armed on the clock for the next hour (the registration's
    /// refresh is a day away); returns whether none is.
    func noTimerWithinAnHour() async throws -> Bool {
        func none() -> Bool { clock.nextDeadline.map { $0 > clock.now + .seconds(3600) } ?? true }
        for _ in 0..<500 where !none() { try await Task.sleep(for: .milliseconds(10)) }
        return none()
    }

    @Test func aRetryInBackoffWaitsWhileSuspendedAndRunsAtOnceInTheBackground() async throws {
        let (manager, events, group, run) = try await start(["alice"])
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.suspending) } }
        #expect(try await noTimerWithinAnHour(), "a suspended app keeps its retry timer armed")
        let status = await manager.status().actions["alice.reg"]
        #expect(status?.waitingForWakeUp == true && status?.retryAt == nil)
        let held = events.recorded.compactMap(\.suspensionHold)
        #expect(held.map(\.held) == [["alice.reg"]] && held.first?.trigger == .app(.suspending))

        // Far past every backoff (the maximum is 120 s): nothing reaches the plugin.
        for _ in 0..<10 { clock.advance(by: .seconds(60)) }
        await manager.pushTokenChanged()  // a trigger to wait for: decided after anything due
        try await events.wait { $0.contains { $0.decision?.trigger == .pushTokenChanged } }
        #expect(attempts("alice.reg") == [1], "REGISTER sent while suspended: \(events.recorded)")

        // Awake again, with no time passing: the held retry runs at once.
        let mark = events.count
        await manager.setAppState(.background)
        let retried = try await events.first(since: mark, "the retry") {
            $0.action?.action.service == "alice.reg" && $0.action?.isSucceeded == true
        }
        #expect(retried.action?.attempt == 2)
        #expect(attempts("alice.reg") == [1, 2])
        let released = events.recorded[mark...].compactMap(\.suspensionHold)
        #expect(released.map(\.released) == [["alice.reg"]])
        #expect(released.first?.trigger == .app(.resumed))
        await group.triggerGracefulShutdown()
        try await run.value
    }

    /// Teardown while suspended does not wait for work that would run only on waking: the
    /// held retry is superseded and `run()` returns with no time passing on the manager's clock
    /// (its shutdown timeout, 5 s, never runs out).
    @Test func shutdownWhileSuspendedDropsTheHeldRetryInsteadOfWaitingForIt() async throws {
        let (manager, events, group, run) = try await start(["alice"])
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.suspending) } }
        #expect(try await noTimerWithinAnHour())
        await group.triggerGracefulShutdown()
        try await events.wait("the held retry superseded", timeout: .seconds(10)) { items in
            items.contains { $0.action?.action.service == "alice.reg" && $0.action?.outcome == .superseded }
        }
        try await run.value
        #expect(attempts("alice.reg") == [1])
    }

    /// One line per change, however many services: at most five names per list, escaped.
    @Test func theHoldLineNamesAtMostFiveServicesEscaped() {
        let many = (1...7).map { ServiceID("acct\($0).reg") }
        let hold = SuspensionHoldEvent(
            trigger: .app(.suspending), appState: .suspended, held: many, released: ["evil\nline.reg"], at: clock.now)
        let line = ResilienceEvent.suspensionHold(hold).description
        #expect(
            line == "hold app.suspending -> held 7 (acct1.reg, acct2.reg, acct3.reg, acct4.reg, acct5.reg, +2 more), "
                + "released 1 (evil\\nline.reg)")
        #expect(!line.contains("\n"))
    }

    /// A call keeps its account awake (it runs at full service while suspended): the account's
    /// held retry runs as soon as the call is known.
    @Test func aCallOfTheAccountWhileSuspendedReleasesItsHeldRetry() async throws {
        let (manager, events, group, run) = try await start(["alice"])
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.suspending) } }
        #expect(try await noTimerWithinAnHour())
        #expect(attempts("alice.reg") == [1])

        await manager.register(ClientService(id: "alice.call", kind: .call(.incoming, .active), account: "alice"))
        try await events.wait("the retry") {
            $0.contains { $0.action?.action.service == "alice.reg" && $0.action?.isSucceeded == true }
        }
        #expect(attempts("alice.reg") == [1, 2])
        let last = events.recorded.compactMap(\.suspensionHold).last
        #expect(last?.released == ["alice.reg"] && last?.trigger == nil)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    /// The push replaces alice's held REGISTER with its own, whose retries run while suspended;
    /// bob, whom no push woke, stays held until the app wakes.
    @Test func aPushWokenAccountRetriesWhileSuspendedAndTheOthersStayHeld() async throws {
        let (manager, events, group, run) = try await start(["alice", "bob"])
        plugin.program([.fail(Self.unavailable), .succeed], for: "alice.reg")
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.suspending) } }

        await manager.push(try Push(account: "alice", kind: .call))
        let pushed = try await events.first("the push's REGISTER in its backoff") {
            guard let action = $0.action, action.action.service == "alice.reg", action.isRetrying else { return false }
            return action.action.trigger.name == "push.received.call"
        }
        #expect(pushed.action?.retryAt != nil, "the woken account's retry has a time")
        clock.advance(by: .seconds(5))
        try await events.wait("the woken account's retry succeeded") { items in
            items.contains {
                $0.action?.action.service == "alice.reg" && $0.action?.action.trigger.name == "push.received.call"
                    && $0.action?.isSucceeded == true
            }
        }
        #expect(attempts("bob.reg") == [1], "bob's REGISTER sent while suspended")
        #expect(await manager.status().actions["bob.reg"]?.waitingForWakeUp == true)
        let holds = events.recorded.compactMap(\.suspensionHold)
        #expect(holds.first?.held == ["alice.reg", "bob.reg"], "\(holds)")
        #expect(holds.dropFirst().first?.released == ["alice.reg"], "the push replaced alice's: \(holds)")

        await manager.setAppState(.foreground)
        try await events.wait("bob's retry") {
            $0.contains { $0.action?.action.service == "bob.reg" && $0.action?.isSucceeded == true }
        }
        #expect(attempts("bob.reg") == [1, 2])
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
