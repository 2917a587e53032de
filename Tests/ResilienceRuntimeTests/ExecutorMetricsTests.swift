import Metrics
import MetricsTestKit
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(3)))
struct ExecutorMetricsTests {
    @Test func outcomesAreCountedByKindAndOutcomeAndAttemptsAreTimed() async throws {
        let clock = ManualClock()
        let plugin = RecordingPlugin(id: "sip")
        plugin.program([.fail(PluginError("503", retryAfter: .seconds(2))), .succeed], for: "reg")
        let metrics = TestMetrics()
        let executor = ActionExecutor(
            plugins: [plugin], clock: clock, configuration: .init(randomSeed: 1, metricsFactory: metrics),
            logger: quiet)
        let events = EventRecorder.recording(executor.events())
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        let retry = try await events.wait { $0.isRetrying }.first!
        clock.advance(to: retry.retryAt!)
        try await events.wait { $0.isSucceeded }  // metrics are recorded before the event is emitted
        let retrying = try metrics.expectCounter(
            "netres.actions", [("plugin", "sip"), ("kind", "register"), ("outcome", "retrying")])
        let succeeded = try metrics.expectCounter(
            "netres.actions", [("plugin", "sip"), ("kind", "register"), ("outcome", "succeeded")])
        #expect(retrying.totalValue == 1 && succeeded.totalValue == 1)
        let latency = try metrics.expectTimer("netres.action.latency", [("kind", "register")])
        #expect(latency.values == [0])  // submitted and started at the same manual instant
        let duration = try metrics.expectTimer("netres.action.duration", [("kind", "register")])
        #expect(duration.values.count == 2)
    }

    /// Each action is counted under the `id` of the plugin that performed it; an action no plugin
    /// performs is counted under `none`.
    @Test func actionsAreCountedByThePluginThatPerformedThem() async throws {
        let sip = RecordingPlugin(id: "sip", actions: [.register])
        let http = RecordingPlugin(id: "http", actions: [.drainHTTP])
        let metrics = TestMetrics()
        let executor = ActionExecutor(
            plugins: [sip, http], configuration: .init(randomSeed: 1, metricsFactory: metrics), logger: quiet)
        let events = EventRecorder.recording(executor.events())
        await executor.submit(
            [planned(.register, "a.reg"), planned(.drainHTTP, "api.http"), planned(.publishPresence, "a.pres")],
            epoch: .initial)
        try await events.wait(count: 3) { $0.isSucceeded || $0.outcome.label == "failed" }
        let counts = try [
            ("sip", "register", "succeeded"), ("http", "drain-http", "succeeded"),
            ("none", "publish-presence", "failed"),
        ].map { plugin, kind, outcome in
            try metrics.expectCounter("netres.actions", [("plugin", plugin), ("kind", kind), ("outcome", outcome)])
                .totalValue
        }
        #expect(counts == [1, 1, 1])
        #expect(throws: (any Error).self) {
            try metrics.expectCounter(
                "netres.actions", [("plugin", "http"), ("kind", "register"), ("outcome", "succeeded")])
        }
    }
}
