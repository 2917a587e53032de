// The article "Testing your plugin with the manager", compiled and run as a test; DocumentationTests
// fails when the article's block and this region differ.
// doc:begin Sources/ResilienceTesting/ResilienceTesting.docc/TestingYourPluginWithTheManager.md
import Logging
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

/// The plugin under test: it (re)connects a chat session and counts its connections.
final class ChatPlugin: ResiliencePlugin {
    let id = "chat"
    let connections = Mutex(0)

    func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        service == "chat.session" && [.register, .refreshRegistration, .unregister].contains(kind)
    }

    func perform(_ action: PlannedAction, context: PluginContext) async throws {
        guard context.path.isSatisfied else { throw PluginError("no network") }
        if action.kind != .unregister { connections.withLock { $0 += 1 } }
    }
}

@Test func theChatSessionReconnectsOnceAfterTheNetworkReturns() async throws {
    let network = ScriptedNetworkSource()
    let chat = ChatPlugin()
    let manager = ResilienceManager(source: network, plugins: [chat])
    await manager.register(ClientService(id: "chat.session", kind: .registration, account: "me"))
    let events = EventRecorder.recording(manager.events())  // before anything runs: nothing is missed
    let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
    let running = Task { try await group.run() }

    // At start the default policy connects every registration service.
    try await events.wait("the first connection") { $0.contains { $0.action?.outcome == .succeeded } }

    // Wait for the loss to be decided before restoring: an immediate lose()/restore() is coalesced.
    await network.lose(.noCarrier)
    try await events.wait("the loss decided") { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
    await network.restore()
    try await events.wait(count: 2, "two connections") { $0.action?.outcome == .succeeded }

    #expect(chat.connections.withLock { $0 } == 2)
    await group.triggerGracefulShutdown()
    try await running.value
}
// doc:end

// doc:begin Sources/ResilienceTesting/ResilienceTesting.docc/TestingYourPluginWithTheManager.md
@Test func aLossIsDecidedOnceTheHoldDownHasPassedOnTheManualClock() async throws {
    let clock = ManualClock()
    let network = ScriptedNetworkSource(clock: clock)  // the source stamps transitions on the same clock
    var policy = Policy.default
    policy.holdDown = .seconds(3)
    let manager = ResilienceManager(source: network, policy: policy, plugins: [ChatPlugin()], clock: clock)
    await manager.register(ClientService(id: "chat.session", kind: .registration, account: "me"))
    let events = EventRecorder.recording(manager.events())
    let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
    let running = Task { try await group.run() }
    try await events.wait("the first connection") { $0.contains { $0.action?.outcome == .succeeded } }

    await network.lose(.noCarrier)
    await clock.waitForSleepers(count: 1)  // the manager holds the loss: its hold-down timer sleeps
    clock.advance(by: .seconds(2))
    #expect(await manager.status().path.isSatisfied, "2 s into a 3 s hold-down the loss is not decided")
    clock.advance(by: .seconds(1))
    try await events.wait("the loss decided") { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
    #expect(!(await manager.status().path.isSatisfied))

    await group.triggerGracefulShutdown()
    try await running.value
}
// doc:end
