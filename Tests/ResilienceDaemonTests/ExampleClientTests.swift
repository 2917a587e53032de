import ChildProcesses
import Foundation
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The repository's minimal protocol client (`examples/netres_client.py`, Python's standard
/// library only) is a working external plugin of a real daemon: its services are tracked, and an
/// action the rules decide for them reaches it and succeeds with its outcome.
@Suite(
    .timeLimit(.minutes(3)),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs /usr/bin/python3"))
struct ExampleClientTests {
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../examples/netres_client.py").standardized.path

    @Test func thePythonClientCarriesARegistrationThroughAnAddressChange() async throws {
        let directory = "/tmp/netres-example-client-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try DaemonConfigFile.parse(
            "control-socket: ctl.sock\nhold-down: 0\naccounts: []\n", file: directory + "/netres.yaml",
            directory: directory)
        var logger = Logger(label: "example-client-test")
        logger.logLevel = .critical
        let network = ScriptedNetworkSource()
        let daemon = try Daemon(config: config, source: network, output: { _ in }, logger: logger)
        let events = EventRecorder.recording(daemon.manager.events())
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }

        let output = directory + "/client.out"
        let client = try ChildProcess(
            [
                "/usr/bin/python3", "-B", Self.client, "--socket", config.controlSocket, "--plugin", "demo",
                "--service", "alice.registration:registration:alice", "--action", "register",
            ], output: output)
        defer {
            kill(client.pid, SIGKILL)
            _ = client.hasExited()
        }
        var tracked = false
        for _ in 0..<1000 where !tracked {  // hang guard: 10 s
            tracked = await daemon.manager.status().services.contains { $0.id == "alice.registration" }
            if !tracked { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(tracked, "\(ChildProcess.contents(of: output))")

        var path = ScriptedNetworkSource.satisfiedPath
        path.addresses[0].address = "198.18.0.5"
        await network.change(.address, to: path)
        try await events.wait("the client's register succeeded") {
            $0.contains { $0.action?.action.kind == .register && $0.action?.outcome == .succeeded }
        }
        #expect(ChildProcess.contents(of: output).contains(#""action": "register""#))

        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
    }
}
