import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

/// Records the path every action was handed.
final class PathRecordingPlugin: ResiliencePlugin {
    let id = "path-recorder"
    let paths = Mutex<[NetworkPath]>([])

    func performs(_ kind: ActionKind, for service: ServiceID) -> Bool { kind == .register }

    func perform(_ action: PlannedAction, context: PluginContext) async throws {
        paths.withLock { $0.append(context.path) }
    }
}

@Suite(.timeLimit(.minutes(3)))
struct InitialPathTests {
    /// A plugin binds to the path's addresses: an action decided before the first network change
    /// (the `started` register) must see the satisfied initial path, not an empty one.
    @Test func anActionBeforeAnyChangeSeesTheInitialPath() async throws {
        let clock = ManualClock()
        let source = ScriptedNetworkSource(clock: clock)
        let plugin = PathRecordingPlugin()
        let manager = ResilienceManager(
            source: source, plugins: [plugin], clock: clock, configuration: .init(randomSeed: 7), logger: quiet)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.action?.isSucceeded == true } }
        let seen = plugin.paths.withLock { $0 }
        #expect(seen.first?.isSatisfied == true)
        #expect(seen.first?.addresses.map(\.address) == ["198.18.0.2"])
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
