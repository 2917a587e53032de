import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The policy's hold-down, set exactly as the "Embedding in a client stack" article does
/// (`policy.holdDown = .seconds(3)`), is applied by the manager to any source's losses.
@Suite(.timeLimit(.minutes(3)))
struct HoldDownTests {
    let clock = ManualClock()
    let source: ScriptedNetworkSource

    init() { source = ScriptedNetworkSource(clock: clock) }

    func start() async throws -> (
        ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>
    ) {
        var policy = Policy.default
        policy.holdDown = .seconds(3)
        let manager = ResilienceManager(
            source: source, policy: policy, plugins: [RecordingPlugin(id: "sip")], clock: clock,
            configuration: .init(randomSeed: 5, timeAsleep: { .zero }), logger: quiet)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        return (manager, events, group, run)
    }

    /// Waits until everything queued before it has been decided: triggers are decided in order.
    func settle(_ manager: ResilienceManager, _ events: EventRecorder<ResilienceEvent>, round: Int) async throws {
        await manager.pushTokenChanged()
        try await events.wait(count: round) { $0.decision?.trigger == .pushTokenChanged }
    }

    @Test func aLossIsDecidedOnlyOnceTheHoldDownHasPassed() async throws {
        let (manager, events, group, run) = try await start()
        let lostAt = clock.now
        await source.lose(.noCarrier)
        await clock.waitForSleepers(count: 1)  // the manager holds the loss
        try await settle(manager, events, round: 1)
        clock.advance(to: lostAt + .milliseconds(2999))
        try await settle(manager, events, round: 2)
        #expect(!events.recorded.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) })
        #expect(!events.recorded.contains { $0.transition?.kind == .lost(.noCarrier) })
        #expect(await manager.status().epoch == .initial)

        clock.advance(to: lostAt + .seconds(3))
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        #expect(await manager.status().epoch == NetworkEpoch(rawValue: 1))
        #expect(!(await manager.status().path.isSatisfied))
        #expect(clock.now - lostAt == .seconds(3))
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func aLossRestoredInsideTheHoldDownIsNeverDecided() async throws {
        let (manager, events, group, run) = try await start()
        await source.lose(.noCarrier)
        await clock.waitForSleepers(count: 1)  // the manager holds the loss
        clock.advance(by: .seconds(1))
        await source.restore()
        try await events.wait { $0.contains(where: \.isFlapCoalesced) }
        clock.advance(by: .seconds(5))
        try await settle(manager, events, round: 1)
        let decided = events.recorded.compactMap(\.decision).map(\.trigger)
        #expect(!decided.contains(.network(.lost(.noCarrier))) && !decided.contains(.network(.restored)))
        #expect(!events.recorded.contains { $0.transition?.kind == .lost(.noCarrier) })
        #expect(await manager.status().epoch == .initial)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func anInterfaceTakenDownIsDecidedAtOnceDespiteTheHoldDown() async throws {
        let (manager, events, group, run) = try await start()
        await source.lose(.adminDown)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.adminDown)) } }
        #expect(await manager.status().epoch == NetworkEpoch(rawValue: 1))
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
