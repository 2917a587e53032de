import Foundation
import FoundationNetworking
import HTTPGate
import Logging
import ResilienceCore
import ResilienceTesting
import Synchronization

let testLogger: Logger = {
    var logger = Logger(label: "http-gate-test")
    logger.logLevel = .info
    return logger
}()

/// A real client: URLSession, one connection per request (the server closes each), up to 32 at
/// once, no cache.
let client: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = 20
    configuration.httpMaximumConnectionsPerHost = 32
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    return URLSession(configuration: configuration)
}()

/// GETs `url` and returns the status code.
func fetch(_ url: String) async throws -> Int {
    let (_, response) = try await client.data(from: URL(string: url)!)
    return (response as! HTTPURLResponse).statusCode
}

/// GETs `url` through the gate and returns the status code.
func get(_ url: String, through gate: HTTPGate) async throws -> Int {
    try await gate.perform { try await fetch(url) }
}

/// Runs `body` against a fresh loopback server and stops the server afterwards, awaited, also
/// when `body` throws.
func withSlowServer<T>(_ body: (SlowHTTPServer) async throws -> T) async throws -> T {
    let server = try await SlowHTTPServer.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// A plugin over `gate`, with the gate opened as the default policy opens it at start.
func openedPlugin(_ gate: HTTPGate) async throws -> HTTPGatePlugin {
    let plugin = HTTPGatePlugin(gates: [gate])
    try await plugin.perform(action(.openHTTP, gate.service, trigger: .started), context: context())
    return plugin
}

/// A context whose deadline is `timeout` from now on the continuous clock.
func context(timeout: Duration = .seconds(20)) -> PluginContext {
    .fixture(path: NetworkPath(status: .satisfied), timeout: timeout, logger: testLogger)
}

func action(_ kind: ActionKind, _ service: ServiceID, trigger: Trigger = .app(.enteredBackground)) -> PlannedAction {
    .fixture(kind, for: service, trigger: trigger)
}

/// Waits until `condition` holds: at most 1000 checks, 10 ms apart. Returns whether it held.
@discardableResult
func eventually(_ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<1000 {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// An ordered record of what happened, shared between tasks.
final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}
