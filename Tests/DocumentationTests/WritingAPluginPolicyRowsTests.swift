import Logging
import NetResilience
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The chat example of "Writing a plugin" under the real manager: its services follow the rows
/// their kinds pick, and the policy's own rule runs the plugin's own action.
@Suite(.timeLimit(.minutes(3)))
struct WritingAPluginPolicyRowsTests {
    @Test func theRosterIsDroppedInTheBackgroundAndSyncedInTheForegroundWhileTheSessionStays() async throws {
        let plugin = RecordingPlugin(id: "chat", actions: Set(ActionKind.builtIn).union([.syncRoster]))
        let manager = ResilienceManager(source: ScriptedNetworkSource(), policy: chatPolicy, plugins: [plugin])
        for service in chatServices { await manager.register(service) }
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await events.wait(count: 2, "both services up") { $0.action?.outcome == .succeeded }

        await manager.setAppState(.background)
        try await events.wait("the roster unsubscribed") { $0.contains { Self.done($0, .unsubscribe, "chat.roster") } }
        await manager.setAppState(.foreground)
        try await events.wait("the roster subscribed and synced") {
            $0.contains { Self.done($0, .syncRoster, "chat.roster") }
                && $0.filter { Self.done($0, .subscribe, "chat.roster") }.count == 2
        }
        #expect(!events.recorded.contains { Self.done($0, .unregister, "chat.session") })
        await group.triggerGracefulShutdown()
        try await running.value
    }

    static func done(_ event: ResilienceEvent, _ kind: ActionKind, _ service: ServiceID) -> Bool {
        event.action.map { $0.action.kind == kind && $0.action.service == service && $0.outcome == .succeeded }
            ?? false
    }
}
