import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The manager with the real rules engine and the default policy, end to end on a manual clock.
@Suite(.timeLimit(.minutes(3)))
struct DefaultPolicyIntegrationTests {
    @Test func theDefaultPolicyReRegistersBeforeResubscribingAndTearsDownOnShutdown() async throws {
        let clock = ManualClock()
        let source = ScriptedNetworkSource(clock: clock)
        let sip = RecordingPlugin(id: "sip")
        var policy = Policy.default
        policy.holdDown = .zero  // the loss is decided at once (HoldDownTests cover the window)
        let manager = ResilienceManager(
            source: source, policy: policy, plugins: [sip], clock: clock, configuration: .init(randomSeed: 3),
            logger: quiet)
        let expires = clock.now + .seconds(3600)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a", expires: expires))
        await manager.register(
            ClientService(id: "a.dialog", kind: .subscription(.dialog), account: "a", expires: expires))
        await manager.register(
            ClientService(id: "a.buddies", kind: .subscription(.presenceOthers), account: "a", expires: expires))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { if case .transition = $0 { true } else { false } } }

        await source.lose(.noCarrier)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        await source.restore()
        let restore = try await events.wait { $0.contains { $0.decision?.trigger == .network(.restored) } }
            .compactMap(\.decision).last!
        #expect(restore.epoch == NetworkEpoch(rawValue: 1))
        #expect(restore.actions.contains { $0.service == "a.reg" })
        let count = restore.actions.count
        let done = try await events.wait { items in
            items.compactMap(\.action).filter { $0.epoch.rawValue == 1 && $0.isSucceeded }.count == count
        }.compactMap(\.action)
        let registered = done.firstIndex { $0.action.service == "a.reg" && $0.isSucceeded }!
        let firstSubscription = done.firstIndex { $0.action.service != "a.reg" && $0.isStarted }
        #expect(firstSubscription.map { $0 > registered } ?? true)

        await group.triggerGracefulShutdown()
        try await run.value
        let teardown = events.recorded.compactMap(\.decision).last!
        #expect(teardown.trigger == .shutdown)
        let teardownStarts = sip.starts.filter { $0.action.trigger == .shutdown }.map(\.action)
        #expect(teardownStarts.count == teardown.actions.count)
        if let unregister = teardownStarts.firstIndex(where: { $0.kind == .unregister }) {
            #expect(unregister == teardownStarts.count - 1)
        }
    }

    /// Started on a lost path: nothing that needs the network runs until it is restored.
    @Test func startedOnALostPathRegistersOnRestore() async throws {
        let clock = ManualClock()
        let source = ScriptedNetworkSource(path: NetworkPath(status: .unsatisfied(.noCarrier)), clock: clock)
        let sip = RecordingPlugin(id: "sip")
        let manager = ResilienceManager(
            source: source, plugins: [sip], clock: clock, configuration: .init(randomSeed: 3), logger: quiet)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        let started = try await events.wait { $0.contains { $0.decision?.trigger == .started } }.compactMap(\.decision)
        #expect(started.first?.actions == [])
        await source.restore()
        try await events.wait { $0.contains { $0.action?.isSucceeded == true } }
        #expect(sip.starts.map(\.action.kind) == [.register])
        #expect(sip.starts.first?.action.trigger == .network(.restored))
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
