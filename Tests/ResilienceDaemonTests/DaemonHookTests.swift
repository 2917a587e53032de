import Foundation
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The daemon hands every transition the manager reports to its hooks: a real script records
/// NETRES_EVENT and NETRES_REASON while a scripted network loses and regains the path.
@Suite(.timeLimit(.minutes(3)))
struct DaemonHookTests {
    @Test func everyTransitionTheManagerReportsRunsTheHooks() async throws {
        let directory = "/tmp/netres-daemon-hooks-\(UInt32.random(in: 0...UInt32.max))"
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hook = directory + "/hooks.d/10-record"
        try "#!/bin/sh\necho \"$NETRES_EVENT $NETRES_REASON\" >> \(records)\n".write(
            toFile: hook, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook)
        let config = try configWithoutAccounts(
            "control-socket: ctl.sock\nhooks: { directory: hooks.d, timeout: 5s }\n", file: directory + "/netres.yaml",
            directory: directory)

        let network = ScriptedNetworkSource()
        var logger = Logger(label: "daemon-hook-test")
        logger.logLevel = .warning
        let daemon = try Daemon(config: config, source: network, output: { _ in }, logger: logger)
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }

        func recorded() -> [String] {
            ((try? String(contentsOfFile: records, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func waitFor(_ line: String) async throws {
            for _ in 0..<500 where !recorded().contains(line) { try await Task.sleep(for: .milliseconds(10)) }
        }
        try await waitFor("initial ")
        await network.lose(.noCarrier)
        try await waitFor("lost no-carrier")
        await network.restore()
        try await waitFor("restored ")

        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
        #expect(recorded() == ["initial ", "lost no-carrier", "restored "])
    }
}
