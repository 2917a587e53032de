import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

/// The rules engine owns the app state; the scheduler and status read it from there, from the
/// first wake-up on.
@Suite(.timeLimit(.minutes(3)))
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
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        #expect(await manager.status().appState == state)

        clock.advance(to: first - .seconds(30))
        let due = try await events.wait { $0.contains { $0.decision?.trigger.name == "refresh.due" } }
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
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.interrupted) } }
        let apps = events.recorded.compactMap(\.decision).map(\.trigger).filter { $0.name.hasPrefix("app.") }
        #expect(apps == [.app(.enteredBackground), .app(.interrupted)])
        let status = await manager.status()
        #expect(status.appState == .background && status.isInterrupted)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    /// `resumed` already leads from suspended to background, so asking for background from
    /// suspended reports it alone — the same events flap damping releases for that move (a
    /// redundant `enteredBackground` would count as one more flap).
    @Test func fromSuspendedToBackgroundIsResumedAlone() async throws {
        let clock = ManualClock()
        let manager = ResilienceManager(
            source: ScriptedNetworkSource(clock: clock), plugins: [], appState: .background, clock: clock,
            configuration: .init(randomSeed: 9, timeAsleep: { .zero }), logger: quiet)
        let events = EventRecorder.recording(manager.events())
        await manager.setAppState(.suspended)
        await manager.setAppState(.background)
        // A marker behind them: once it is recorded, every event reported before it was too.
        await manager.beginInterruption()
        try await events.wait { $0.contains { Self.appEvent($0) == .interrupted } }
        #expect(events.recorded.compactMap(Self.appEvent) == [.suspending, .resumed, .interrupted])
    }

    static func appEvent(_ event: ResilienceEvent) -> AppEvent? {
        if case .app(let app, _) = event { app } else { nil }
    }
}

/// The rules engine owns the network path: status shows the path the last network decision was
/// made on, and the executor hands plugins that same path.
@Suite(.timeLimit(.minutes(3)))
struct PathOwnerTests {
    /// Records the path each action's context carries.
    final class PathRecordingPlugin: ResiliencePlugin {
        let id = "path-recorder"
        private let paths = Mutex<[(ActionKind, Trigger, NetworkPath)]>([])
        func performs(_ kind: ActionKind, for service: ServiceID) -> Bool { true }
        func perform(_ action: PlannedAction, context: PluginContext) async throws {
            paths.withLock { $0.append((action.kind, action.trigger, context.path)) }
        }
        var performed: [(ActionKind, Trigger, NetworkPath)] { paths.withLock { $0 } }
    }

    @Test func statusAndDecisionsAgreeOnThePathAfterALossAndARestore() async throws {
        let clock = ManualClock()
        let source = ScriptedNetworkSource(clock: clock)
        var policy = Policy.default
        policy.holdDown = .zero
        let plugin = PathRecordingPlugin()
        let manager = ResilienceManager(
            source: source, policy: policy, plugins: [plugin], clock: clock,
            configuration: .init(randomSeed: 3, timeAsleep: { .zero }), logger: quiet)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        #expect(await manager.status().path == ScriptedNetworkSource.satisfiedPath)

        await source.lose(.noCarrier)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        let lost = await manager.status()
        #expect(lost.path.status == .unsatisfied(.noCarrier))
        #expect(lost.epoch == NetworkEpoch(rawValue: 1))
        let lostDecision = events.recorded.compactMap(\.decision).first { $0.trigger == .network(.lost(.noCarrier)) }
        #expect(lostDecision?.actions.allSatisfy { !$0.kind.needsNetwork } == true)

        var moved = ScriptedNetworkSource.satisfiedPath
        moved.addresses[0].address = "198.18.0.9"
        await source.restore(moved)
        let restored = try await events.wait(count: 1) {
            $0.action?.outcome == .succeeded && $0.action?.action.trigger == .network(.restored)
        }
        #expect(!restored.isEmpty)
        let status = await manager.status()
        #expect(status.path == moved)
        let restoreActions = plugin.performed.filter { $0.1 == .network(.restored) }
        #expect(!restoreActions.isEmpty)
        #expect(restoreActions.allSatisfy { $0.2 == status.path })
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
