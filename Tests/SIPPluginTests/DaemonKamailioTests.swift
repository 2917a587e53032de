import ChildProcesses
import Foundation
import Logging
import NetworkLab
import ResilienceCore
import ResilienceDaemon
import ResilienceTesting
import ServiceLifecycle
import Testing

/// `netres run` in-process (config file → ``Daemon``) against a real Kamailio on loopback: the
/// network source is scripted (a satisfied loopback path) so the test does not depend on the
/// host's routes; SIP, the control socket and the registrar are real.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct DaemonKamailioTests {
    actor Lines {
        var all: [String] = []
        func append(_ line: String) { all.append(line) }
    }

    /// Runs blocking work (the blocking control client) on its own
    /// thread, so it never starves the two-thread cooperative pool the other suites share.
    func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await OffThePool.run(body)
    }

    /// The config's `accounts:` key with one account of `user` at the loopback Kamailio, open
    /// for more of that account's keys on the lines after it (indented four spaces).
    func accountsEntry(_ user: String, _ kamailio: LabRegistrar) -> String {
        "accounts:\n  - name: \(user)\n    registrar: 127.0.0.1\n    port: \(kamailio.port)\n    user: \(user)\n"
            + "    domain: 127.0.0.1"
    }

    func contacts(_ kamailio: LabRegistrar) async throws -> [String] { try await kamailio.contacts() }

    func send(_ line: String, _ socket: String) async throws -> String {
        try await offPool { try ControlClient.send(line, socket: socket) }
    }

    /// The daemon of the config at `configPath` on a scripted loopback path, started and running
    /// its service group; its log lines collected.
    func startDaemon(configPath: String) async throws -> (Daemon, ServiceGroup, Task<Void, any Error>, Lines) {
        let lines = Lines()
        var logger = Logger(label: "daemon-test")
        logger.logLevel = .warning
        let daemon = try Daemon(
            config: try DaemonConfigFile.load(path: configPath), source: ScriptedNetworkSource(path: loopbackPath()),
            output: { await lines.append($0) }, logger: logger)
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        return (daemon, group, Task { try await group.run() }, lines)
    }

    @Test func runRegistersAnswersControlCommandsAndUnregistersOnShutdown() async throws {
        try await withLoopbackRegistrar { kamailio in try await exercise(kamailio) }
    }

    func exercise(_ kamailio: LabRegistrar) async throws {
        let user = uniqueUser("daemon")
        let password = "secret-\(user)"
        let directory = URL(fileURLWithPath: "/tmp/netres-run-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "\(password)\n".write(to: directory.appendingPathComponent("pw"), atomically: true, encoding: .utf8)
        let socket = directory.appendingPathComponent("run/ctl.sock").path
        let configPath = directory.appendingPathComponent("netres.yaml").path
        try """
        log-format: json
        control-socket: run/ctl.sock
        \(accountsEntry(user, kamailio))
            password-file: pw
            expires: 300
            push: { provider: apns, param: team.app.voip, token-file: state/\(user).push }
        """.write(toFile: configPath, atomically: true, encoding: .utf8)

        let (daemon, group, running, lines) = try await startDaemon(configPath: configPath)

        #expect(try await eventually(within: .seconds(10)) { try await contacts(kamailio).count == 1 })
        // The outcome reaches the status right after the 200 OK reaches the registrar's table.
        #expect(
            try await eventually(within: .seconds(10)) {
                try await send("status", socket)
                    .contains("service \(user).registration: register -> succeeded")
            })
        var status = try await send("status", socket)
        #expect(status.contains("account \(user): registered sip:\(user)@127.0.0.1:"))
        #expect(status.contains("push service not available"))

        #expect(try await send("state background", socket) == "ok state background\n")
        status = try await send(#"{"command":"status","json":true}"#, socket)
        #expect(status.contains(#""app_state":"background""#))

        #expect(try await send("push-token \(user) tok-42", socket) == "ok push-token \(user)\n")
        #expect(PushTokenStore.read(directory.appendingPathComponent("state/\(user).push").path) == "tok-42")
        #expect(
            try await eventually(within: .seconds(10)) {
                try await contacts(kamailio).map { $0.contains("pn-prid=tok-42") } == [true]
            })
        status = try await send("status --json", socket)
        #expect(status.contains(#""push_available":true"#))
        #expect(try await send("state asleep", socket).hasPrefix("error: "))

        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
        #expect(try await contacts(kamailio).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: socket))

        let output = await lines.all
        #expect(output.contains { $0.contains(#""action":"unregister""#) && $0.contains(#""outcome":"succeeded""#) })
        #expect(output.contains { $0.contains(#""kind":"decision""#) && $0.contains(#""event":"started""#) })
        for text in output + [status] { #expect(!text.contains(password)) }
    }
}
