import Logging
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

/// An action no plugin performs never stalls the service's queue: a plugin performs only the
/// kinds it has a use for, and the default policy's SIP-specific steps are skipped for it.
@Suite(.timeLimit(.minutes(3)))
struct UnperformedActionTests {
    /// The testing article's own `ChatPlugin` (register, refresh, unregister only) under the
    /// default policy, whose address change plans `close-stale-transports`, `register`,
    /// `unregister-old-contact` for every registration.
    @Test func theArticlesChatPluginReconnectsAfterAnAddressChangeUnderTheDefaultPolicy() async throws {
        let network = ScriptedNetworkSource()
        let chat = ChatPlugin()
        let manager = ResilienceManager(source: network, plugins: [chat])
        await manager.register(ClientService(id: "chat.session", kind: .registration, account: "me"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
        let running = Task { try await group.run() }

        try await events.wait("the first connection") { $0.contains { $0.action?.outcome == .succeeded } }
        var moved = ScriptedNetworkSource.satisfiedPath
        moved.addresses = [InterfaceAddress(ifindex: 2, family: .ipv4, address: "198.18.0.9", prefixLength: 15)]
        await network.change(.address, to: moved)
        try await events.wait(count: 2, "the reconnection at the new address") { $0.action?.outcome == .succeeded }

        let outcomes = events.recorded.compactMap(\.action).map { "\($0.action.kind) \($0.outcome.label)" }
        #expect(outcomes.contains("close-stale-transports skipped"), "\(outcomes)")
        #expect(!outcomes.contains { $0.hasSuffix(" failed") }, "a step the plugin does not perform is no failure")
        #expect(chat.connections.withLock { $0 } == 2)
        await group.triggerGracefulShutdown()
        try await running.value
    }

    /// A kind that is not an optional step still fails (a policy naming an action nobody
    /// performs is a mistake to see), but the service's next action and its dependents go on.
    @Test func anActionNoPluginPerformsFailsAndTheQueueBehindItMovesOn() async throws {
        let clock = ManualClock()
        let plugin = RecordingPlugin(actions: [.register, .subscribe])
        let executor = ActionExecutor(
            plugins: [plugin], clock: clock, configuration: .init(randomSeed: 7), path: upPath, logger: quiet)
        let events = EventRecorder.recording(executor.events())
        await executor.submit(
            [
                planned("example.unknown", "reg"), planned(.unregisterOldContact, "reg"), planned(.register, "reg"),
                planned(.subscribe, "sub", after: ["reg"]),
            ], epoch: .initial)
        try await events.wait(count: 2, "register and subscribe succeeded") { $0.outcome == .succeeded }
        let outcomes = events.recorded.map { "\($0.action.kind) \($0.outcome.label)" }
        #expect(
            outcomes == [
                "example.unknown failed", "unregister-old-contact skipped", "register started", "register succeeded",
                "subscribe started", "subscribe succeeded",
            ])
        #expect(plugin.starts.map(\.action.kind) == [.register, .subscribe])
    }
}
