import Foundation
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// `netres ctl events` end to end inside one daemon: a client that sends `events` on the
/// control socket gets the transitions, app-state changes and decisions as JSON lines, the same
/// as the daemon's JSON log with `"type":"event"` first; a plugin's hello with `events` gets them
/// beside its perform messages.
@Suite(.timeLimit(.minutes(3)))
struct DaemonEventStreamTests {
    @Test func anEventsClientGetsTransitionsAppChangesAndDecisionsAsJSONLines() async throws {
        let directory = "/tmp/netres-daemon-events-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try DaemonConfigFile.parse(
            """
            control-socket: ctl.sock
            app-state: foreground
            accounts:
              - { name: alice, registrar: 127.0.0.1, port: 9, user: alice, domain: example.test, password: x }
            """, file: directory + "/netres.yaml", directory: directory)
        var logger = Logger(label: "daemon-events-test")
        logger.logLevel = .critical
        let network = ScriptedNetworkSource()
        let daemon = try Daemon(config: config, source: network, output: { _ in }, logger: logger)
        let decisions = EventRecorder.recording(daemon.manager.events())
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }
        defer { running.cancel() }
        try await decisions.wait { $0.contains { $0.decision?.trigger == .started } }

        let watcher = try await ScriptedExternalPlugin(socket: config.controlSocket)
        await watcher.send("events")
        _ = try #require(await watcher.next("welcome"))  // sent once subscribed
        let listener = try await ScriptedExternalPlugin(socket: config.controlSocket)
        await listener.send(type: "hello", #""protocol":1,"events":true"#)
        _ = try #require(await listener.next("welcome"))

        await daemon.manager.setAppState(.background)
        var path = ScriptedNetworkSource.satisfiedPath
        path.addresses[0].address = "198.18.0.9"
        await network.change(.address, to: path)

        for client in [watcher, listener] {
            var kinds: [String] = []
            var events: [String] = []
            for _ in 0..<50 where !events.contains("network.changed.address") {
                let line = try #require(await client.next("event"))
                kinds.append(line.fields["kind"] as? String ?? "")
                events.append(line.fields["event"] as? String ?? "")
            }
            #expect(kinds.contains("app"), "\(kinds)")
            #expect(events.contains("app.entered-background"), "\(events)")
            #expect(events.contains("network.changed.address"), "\(events)")
        }
        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
    }
}
