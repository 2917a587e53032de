import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// Flap damping inside the manager, on a manual clock: a storm of N flaps (or app-state changes)
/// costs O(1) decisions, a single one acts at once, and what was held is decided once it settles.
@Suite(.timeLimit(.minutes(3)))
struct ManagerDampingTests {
    let clock = ManualClock()
    let source: ScriptedNetworkSource
    let sip = RecordingPlugin(id: "sip", actions: Set(ActionKind.builtIn))

    init() { source = ScriptedNetworkSource(clock: clock) }

    static let services = [
        ClientService(id: "a.reg", kind: .registration, account: "a"),
        ClientService(id: "a.mwi", kind: .subscription(.messageSummary), account: "a"),
    ]

    func start() async throws -> (
        ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>
    ) {
        let manager = ResilienceManager(
            source: source, plugins: [sip], clock: clock, configuration: .init(randomSeed: 9), logger: quiet,
            decide: testDecide)
        for service in Self.services { await manager.register(service) }
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        return (manager, events, group, run)
    }

    @Test func aSingleFlapActsAtOnce() async throws {
        let (_, events, group, run) = try await start()
        await source.lose(.adminDown)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.adminDown)) } }
        await source.restore()
        try await events.wait { $0.filter { $0.action?.isSucceeded == true }.count == 2 }
        #expect(!events.recorded.contains { $0.damping != nil })
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func twoHundredAdminFlapsCostAConstantNumberOfRegistrations() async throws {
        let (manager, events, group, run) = try await start()
        for round in 1...200 {
            // Paced: each transition is processed (decided or held) before the next, so none
            // cancel out in the queue; only damping can save the requests.
            await source.lose(.adminDown)
            try await events.wait { $0.filter(\.isNetworkProcessed).count == 2 * round - 1 }
            await source.restore()
            try await events.wait { $0.filter(\.isNetworkProcessed).count == 2 * round }
        }
        let held = try #require(await manager.status().damping.networkHeldUntil)
        let beforeRelease = sip.starts.filter { $0.action.kind == .register }.count
        #expect(beforeRelease <= 2, "registers during the storm: \(beforeRelease)")
        clock.advance(to: held)
        try await events.wait { $0.contains { $0.damping?.released == true } }
        try await events.wait { items in
            items.compactMap(\.action).contains { $0.isSucceeded && $0.action.kind == .subscribe && $0.at >= held }
        }
        let registers = sip.starts.filter { $0.action.kind == .register }.count
        #expect(registers <= 3 && registers > beforeRelease, "registers for 200 flaps: \(registers)")
        let status = await manager.status()
        #expect(status.damping.networkFlaps == 200 && status.damping.networkHeldUntil == nil)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func aHundredAppStateCyclesAreDecidedAsOneChange() async throws {
        let (manager, events, group, run) = try await start()
        for round in 1...100 {
            await manager.setAppState(.background)
            try await events.wait { $0.filter(\.isAppProcessed).count == 2 * round - 1 }
            await manager.setAppState(.foreground)
            try await events.wait { $0.filter(\.isAppProcessed).count == 2 * round }
        }
        await manager.setAppState(.background)
        try await events.wait { $0.filter(\.isAppProcessed).count == 201 }
        let decidedDuringStorm = events.recorded.filter(\.isAppDecision).count
        #expect(decidedDuringStorm <= 2, "app-state changes decided during the storm: \(decidedDuringStorm)")
        let held = try #require(await manager.status().damping.appHeldUntil)
        clock.advance(to: held)
        let items = try await events.wait { $0.filter(\.isAppDecision).count == decidedDuringStorm + 1 }
        #expect(items.last(where: \.isAppDecision)?.decision?.trigger == .app(.enteredBackground))
        #expect(await manager.status().damping.appHeldUntil == nil)
        await group.triggerGracefulShutdown()
        try await run.value
    }
}

extension ResilienceEvent {
    /// A network trigger the manager processed: decided, or held by damping.
    var isNetworkProcessed: Bool {
        if case .decision(.network, _, _, _) = self { return true }
        return damping?.source == .network && damping?.released == false
    }
    var isAppDecision: Bool {
        if case .decision(.app, _, _, _) = self { return true }
        return false
    }
    var isAppProcessed: Bool { isAppDecision || (damping?.source == .app && damping?.released == false) }
}
