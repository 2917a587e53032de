import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The rules engine owns the app state; the scheduler and status read it from there, from the
/// first wake-up on.
@Suite(.timeLimit(.minutes(1)))
struct StateOwnerTests {
    /// In the background one wake-up takes everything due within the minimum background interval
    /// (600 s); in the foreground only what is due within the 10 s coalescing window. Refreshes
    /// due 300 s apart therefore share the first wake-up only if the scheduler starts in background.
    @Test(arguments: [(AppState.background, 1), (.foreground, 2)])
    func theSchedulerUsesTheAppStateTheManagerIsCreatedWith(state: AppState, wakeUps: Int) async throws {
        let clock = ManualClock()
        let manager = ResilienceManager(
            source: ScriptedNetworkSource(clock: clock), plugins: [RecordingPlugin(id: "sip")], appState: state,
            clock: clock, configuration: .init(randomSeed: 9, timeAsleep: { .zero }), logger: quiet)
        let first = clock.now + .seconds(100)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a", expires: first))
        await manager.register(
            ClientService(id: "b.reg", kind: .registration, account: "b", expires: first + .seconds(300)))
        let events = Recorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        await events.wait { $0.contains { $0.decision?.trigger == .started } }
        #expect(await manager.status().appState == state)

        clock.advance(to: first - .seconds(30))
        let due = await events.wait { $0.contains { $0.decision?.trigger.name == "refresh.due" } }
            .compactMap(\.decision).filter { $0.trigger.name == "refresh.due" }
        let expected: Trigger = wakeUps == 1 ? .refreshDue(["a.reg", "b.reg"]) : .refreshDue(["a.reg"])
        #expect(due.map(\.trigger) == [expected])
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func appEventsReachStatusOnceDecidedAndSetAppStateCountsTheUndecidedOnes() async throws {
        let clock = ManualClock()
        let manager = ResilienceManager(
            source: ScriptedNetworkSource(clock: clock), plugins: [], clock: clock,
            configuration: .init(randomSeed: 9, timeAsleep: { .zero }), logger: quiet)
        // Before run(): nothing is decided yet, but a second request sees the first.
        await manager.setAppState(.background)
        await manager.setAppState(.background)
        await manager.beginInterruption()
        #expect(await manager.status().appState == .foreground)
        let events = Recorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        await events.wait { $0.contains { $0.decision?.trigger == .app(.interrupted) } }
        let apps = events.items.compactMap(\.decision).map(\.trigger).filter { $0.name.hasPrefix("app.") }
        #expect(apps == [.app(.enteredBackground), .app(.interrupted)])
        let status = await manager.status()
        #expect(status.appState == .background && status.isInterrupted)
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
