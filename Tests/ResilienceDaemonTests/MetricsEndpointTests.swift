import Foundation
import FoundationNetworking
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// `GET /metrics` on a real loopback socket after a scripted flap: the transition and action
/// counters and the recovery histograms are there, with the counts the flap produced.
@Suite(.timeLimit(.minutes(3)))
struct MetricsEndpointTests {
    static let logger: Logger = {
        var logger = Logger(label: "metrics-test")
        logger.logLevel = .warning
        return logger
    }()

    static func scrape(_ port: Int) async throws -> String {
        let url = URL(string: "http://127.0.0.1:\(port)/metrics")!
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        return String(decoding: data, as: UTF8.self)
    }

    /// The value of the sample line starting with `series` (name and labels), nil when absent.
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    @Test func theDaemonServesItsTransitionsAndDowntimeOnLoopback() async throws {
        let directory = "/tmp/netres-metrics-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try configWithoutAccounts(
            "control-socket: ctl.sock\nmetrics: { port: 0 }\n", file: directory + "/netres.yaml", directory: directory)
        #expect(config.metrics == MetricsConfig(address: "127.0.0.1", port: 0))
        let network = ScriptedNetworkSource()
        let (stream, output) = AsyncStream<String>.makeStream()
        let log = EventRecorder.recording(stream)
        let daemon = try Daemon(
            config: config, source: network, environment: [:], output: { output.yield($0) },
            logger: Self.logger)
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }
        let port = try #require(await daemon.metricsEndpoint?.port())
        try await log.wait("the initial path logged") { $0.contains { $0.contains(" initial ") } }
        await network.lose(.noCarrier)
        try await log.wait("the loss decided") { $0.contains { $0.contains("decision network.lost") } }
        await network.restore()
        try await log.wait("the restore decided") { $0.contains { $0.contains("decision network.restored") } }
        let text = try await Self.scrape(port)
        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
        #expect(Self.sample(text, #"netres_transitions{kind="initial"}"#) == 1, "\(text)")
        #expect(Self.sample(text, #"netres_transitions{kind="lost"}"#) == 1)
        #expect(Self.sample(text, #"netres_transitions{kind="restored"}"#) == 1)
        #expect(Self.sample(text, "netres_path_downtime_count") == 1)
        #expect(Self.sample(text, "netres_recovery_count") == 0, "served before any registration recovered")
    }

    @Test func actionsByOutcomeAndTheRecoveryHistogramAfterAFlap() async throws {
        let metrics = DaemonMetrics()
        let endpoint = MetricsEndpoint(config: MetricsConfig(port: 0), metrics: metrics, logger: Self.logger)
        let network = ScriptedNetworkSource()
        let plugin = RecordingPlugin()
        plugin.program([.fail(PluginError("503 Service Unavailable", retryAfter: .zero)), .succeed], for: "alice.reg")
        let manager = ResilienceManager(
            source: network, plugins: [plugin], configuration: .init(randomSeed: 3, metricsFactory: metrics.factory),
            logger: Self.logger)
        await manager.register(ClientService(id: "alice.reg", kind: .registration, account: "alice"))
        let events = EventRecorder.recording(manager.events())
        let stream = manager.events()
        let observer = Task { for await event in stream { metrics.observe(event) } }
        let group = ServiceGroup(services: [endpoint, manager], logger: Self.logger)
        let running = Task { try await group.run() }
        let port = try #require(await endpoint.port())
        try await events.wait("the start-up registration") { $0.contains { $0.action?.outcome == .succeeded } }
        await network.lose(.noCarrier)
        try await events.wait("the loss decided") {
            $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) }
        }
        await network.restore()
        try await events.wait(count: 2, "two registrations", where: { $0.action?.outcome == .succeeded })
        var text = ""
        for _ in 0..<50 {  // the observer task may lag the recorder by an event: bounded re-scrapes
            text = try await Self.scrape(port)
            if Self.sample(text, "netres_recovery_count") == 1 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        await group.triggerGracefulShutdown()
        try await running.value
        observer.cancel()
        #expect(
            Self.sample(text, #"netres_actions{plugin="recording",kind="register",outcome="retrying"}"#) == 1, "\(text)"
        )
        #expect(
            (Self.sample(text, #"netres_actions{plugin="recording",kind="register",outcome="succeeded"}"#) ?? 0) >= 1)
        #expect(Self.sample(text, #"netres_transitions{kind="lost"}"#) == 1)
        #expect(Self.sample(text, "netres_recovery_count") == 1)
        #expect(Self.sample(text, #"netres_registrations{outcome="succeeded"}"#) ?? 0 >= 2)
        #expect(text.contains(#"netres_recovery_bucket{le="+Inf"} 1"#))
    }

    /// A dashboard or an alert on a counter sees 0 before the first event, not "no data".
    @Test func everyCountedSeriesIsServedAtZeroBeforeAnythingHappens() {
        let text = String(decoding: DaemonMetrics().exposition(), as: UTF8.self)
        for series in [
            "netres_flows_lost", #"netres_call_events{state="active"}"#, #"netres_call_events{state="ended"}"#,
            #"netres_transitions{kind="lost"}"#, #"netres_transitions{kind="changed"}"#,
            #"netres_registrations{outcome="failed"}"#, #"netres_registrations{outcome="succeeded"}"#,
            "netres_recovery_count", "netres_path_downtime_count",
            #"netres_actions{plugin="sip",kind="register",outcome="failed"}"#,
            #"netres_actions{plugin="sip",kind="subscribe",outcome="succeeded"}"#,
        ] {
            #expect(Self.sample(text, series) == 0, "\(series) at start:\n\(text)")
        }
    }

    @Test func theEndpointAnswersOnlyMetrics() async throws {
        let endpoint = MetricsEndpoint(config: MetricsConfig(port: 0), metrics: DaemonMetrics(), logger: Self.logger)
        let group = ServiceGroup(services: [endpoint], logger: Self.logger)
        let running = Task { try await group.run() }
        let port = try #require(await endpoint.port())
        let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/secrets")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 404)
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
