import Foundation
// The code between the snippet markers is the article "Testing your plugin with the manager"
// (Sources/ResilienceTesting/ResilienceTesting.docc/TestingYourPluginWithTheManager.md), character
// for character: `theArticleShowsThisFilesCode` fails when the two differ.
// snippet:begin
import Logging
import ResilienceCore
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
// snippet:end

@Test func theArticleShowsThisFilesCode() throws {
    let here = URL(fileURLWithPath: #filePath)
    let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let article = try String(
        contentsOf: root.appendingPathComponent(
            "Sources/ResilienceTesting/ResilienceTesting.docc/TestingYourPluginWithTheManager.md"),
        encoding: .utf8)
    let source = try String(contentsOf: here, encoding: .utf8)
    let snippet = try #require(source.between("// snippet:begin\n", and: "// snippet:end\n"))
    let block = try #require(article.between("```swift\n", and: "```\n"))
    #expect(block == snippet, "the article's code block and this file's snippet differ")
}

extension String {
    /// The text between the first `start` and the next `end`, without them.
    fileprivate func between(_ start: String, and end: String) -> String? {
        guard let open = range(of: start), let close = range(of: end, range: open.upperBound..<endIndex) else {
            return nil
        }
        return String(self[open.upperBound..<close.lowerBound])
    }
}
