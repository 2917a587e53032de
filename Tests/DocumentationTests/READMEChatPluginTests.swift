import Logging
import NetResilience
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The README's own `ChatPlugin` (register, refresh, unregister only) under the default policy:
/// after an address change it connects again from the new address.
@Suite(.timeLimit(.minutes(1)))
struct READMEChatPluginTests {
    @Test func theREADMEsChatPluginReconnectsAfterAnAddressChange() async throws {
        let network = ScriptedNetworkSource()
        let manager = ResilienceManager(source: network, plugins: [ChatPlugin()])
        await manager.register(ClientService(id: "chat.session", kind: .registration, account: "me"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        try await events.wait("the first connection") { $0.contains { $0.action?.outcome == .succeeded } }

        var moved = ScriptedNetworkSource.satisfiedPath
        moved.addresses = [InterfaceAddress(ifindex: 2, family: .ipv4, address: "198.18.0.9", prefixLength: 15)]
        await network.change(.address, to: moved)
        try await events.wait(count: 2, "a register after the change") {
            $0.action?.action.kind == .register && $0.action?.outcome == .succeeded
        }
        // The batch's last step, after the register.
        try await events.wait("the old contact's removal skipped") {
            $0.contains { $0.action?.action.kind == .unregisterOldContact && $0.action?.outcome == .skipped }
        }
        let skipped = events.recorded.compactMap(\.action).filter { $0.outcome == .skipped }.map(\.action.kind)
        #expect(Set(skipped) == [.closeStaleTransports, .unregisterOldContact])
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
