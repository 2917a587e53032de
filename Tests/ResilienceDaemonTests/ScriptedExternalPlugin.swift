import ChildProcesses
import Foundation
import Glibc
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization

/// A plugin written against the external plugin protocol alone: JSON lines over a real unix
/// socket, read and written by hand (as a C or Go client would), blocking calls off the pool.
final class ScriptedExternalPlugin: Sendable {
    let fd: Int32
    private let pending = Mutex<[UInt8]>([])

    init(socket path: String) async throws {
        var fd: Int32 = -1
        for _ in 0..<200 where fd < 0 {  // hang guard: the server may still be binding (2 s)
            fd = (try? await OffThePool.run { () throws(DaemonError) in try ControlClient.connect(socket: path) }) ?? -1
            if fd < 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
        guard fd >= 0 else { throw DaemonError("cannot connect to \(path)") }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Sends one line (a newline is added).
    func send(_ line: String) async {
        let fd = fd
        await OffThePool.run {
            var bytes = Array((line + "\n").utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return }
                bytes = bytes.dropFirst(n)
            }
        }
    }

    /// Sends one message given as JSON text with `"type"` first.
    func send(type: String, _ members: String = "") async {
        await send("{\"type\":\"\(type)\"" + (members.isEmpty ? "" : "," + members) + "}")
    }

    /// The next line from the daemon; nil when it closed (or 10 s passed: the socket's timeout).
    func nextLine() async -> String? {
        let fd = fd
        while true {
            let line: String? = pending.withLock { buffer in
                guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { buffer.removeSubrange(...newline) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }
            if let line { return line }
            let chunk: [UInt8]? = await OffThePool.run {
                var bytes = [UInt8](repeating: 0, count: 65536)
                let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                return n > 0 ? Array(bytes[..<n]) : nil
            }
            guard let chunk else { return nil }
            pending.withLock { $0 += chunk }
        }
    }

    /// The next message as a dictionary; nil when the daemon closed.
    func next() async -> Message? {
        guard let line = await nextLine() else { return nil }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return Message(fields: ["type": "unparsable", "line": line])
        }
        return Message(fields: object)
    }

    /// The next message of `type`, skipping others (events); nil when the daemon closed.
    func next(_ type: String) async -> Message? {
        for _ in 0..<10_000 {
            guard let message = await next() else { return nil }
            if message.type == type { return message }
        }
        return nil
    }

    /// Ends the connection (a plugin that dies).
    func disconnect() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// One parsed message; `[String: Any]` wrapped so a test can hand it around.
    struct Message: @unchecked Sendable, CustomStringConvertible {
        let fields: [String: Any]
        var type: String { fields["type"] as? String ?? "" }
        var id: Int { (fields["id"] as? NSNumber)?.intValue ?? -1 }
        var action: String { fields["action"] as? String ?? "" }
        var service: String { fields["service"] as? String ?? "" }
        var attempt: Int { (fields["attempt"] as? NSNumber)?.intValue ?? -1 }
        var trigger: String { fields["trigger"] as? String ?? "" }
        var reason: String { fields["reason"] as? String ?? "" }
        var description: String { "\(fields)" }
    }
}

/// A manager on a `ManualClock` whose one plugin is the external plugin hub, served on a real
/// control socket in a scratch folder; removed at the end.
struct ExternalPluginRig {
    let clock = ManualClock()
    let network: ScriptedNetworkSource
    let hub = ExternalPluginHub(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    let manager: ResilienceManager
    let events: EventRecorder<ResilienceEvent>
    let socket: String
    static let actionTimeout = Duration.seconds(10)

    init() {
        network = ScriptedNetworkSource(clock: clock)
        manager = ResilienceManager(
            source: network, policy: Policy(holdDown: .zero, flapDamping: .off), plugins: [hub], clock: clock,
            configuration: .init(actionTimeout: Self.actionTimeout, randomSeed: 7),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        events = EventRecorder.recording(manager.events())
        socket = "/tmp/netres-ext-\(UUID().uuidString.prefix(8))/control.sock"
    }

    /// Runs the manager and the control socket while `body` runs.
    func run(_ body: () async throws -> Void) async throws {
        let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let sessions = ExternalPluginSessions(
            hub: hub, logger: quiet, command: { "ok \($0)\n" }, push: { "ok push \($0.account)\n" })
        let server = ControlServer(path: socket, logger: quiet, sessions: sessions.handler) { "ok \($0)\n" }
        let group = ServiceGroup(services: [server, manager], logger: quiet)
        let running = Task { try await group.run() }
        defer { try? FileManager.default.removeItem(atPath: (socket as NSString).deletingLastPathComponent) }
        let failure: (any Error)?
        do {
            try await body()
            failure = nil
        } catch {
            failure = error
        }
        // Teardown actions wait on the manual clock: move it until the group has returned.
        await group.triggerGracefulShutdown()
        let done = Atomic<Bool>(false)
        let ended = Task {
            defer { done.store(true, ordering: .releasing) }
            try await running.value
        }
        for _ in 0..<600 where !done.load(ordering: .acquiring) {  // hang guard: 60 s
            clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(100))
        }
        try await ended.value
        if let failure { throw failure }
    }

    /// A plugin that declared `alice.registration` (and the call `alice.call-1` when `call`),
    /// welcomed.
    func connect(
        actions: [String] = ["register", "close-stale-transports", "reinvite-call"], call: Bool = false
    ) async throws -> ScriptedExternalPlugin {
        let plugin = try await ScriptedExternalPlugin(socket: socket)
        var services = [#"{"id":"alice.registration","kind":"registration","account":"alice"}"#]
        if call {
            services.append(
                #"{"id":"alice.call-1","kind":"call","direction":"outgoing","state":"active","account":"alice"}"#)
        }
        let list = actions.map { "\"\($0)\"" }.joined(separator: ",")
        await plugin.send(
            type: "hello",
            #""protocol":1,"plugin":"scripted","services":[\#(services.joined(separator: ","))],"actions":[\#(list)]"#)
        guard let welcome = await plugin.next(), welcome.type == "welcome" else {
            throw DaemonError("no welcome")
        }
        return plugin
    }

    /// Waits until the manager tracks `service` (the hello's services arrive as plugin reports).
    func waitUntilTracked(_ service: ServiceID) async throws {
        for _ in 0..<1000 {  // hang guard: 10 s
            if await manager.status().services.contains(where: { $0.id == service }) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw DaemonError("\(service) never tracked")
    }

    /// A new address on eth0: the default policy's `network.changed.address`.
    func changeAddress(to address: String = "198.18.0.3") async {
        var path = ScriptedNetworkSource.satisfiedPath
        path.addresses[0].address = address
        await network.change(.address, to: path)
    }
}
