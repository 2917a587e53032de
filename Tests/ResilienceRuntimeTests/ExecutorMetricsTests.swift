import Metrics
import MetricsTestKit
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ExecutorMetricsTests {
    @Test func outcomesAreCountedByKindAndOutcomeAndAttemptsAreTimed() async throws {
        let clock = ManualClock()
        let plugin = RecordingPlugin()
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
        let retrying = try metrics.expectCounter("netres.actions", [("kind", "register"), ("outcome", "retrying")])
        let succeeded = try metrics.expectCounter("netres.actions", [("kind", "register"), ("outcome", "succeeded")])
        #expect(retrying.totalValue == 1 && succeeded.totalValue == 1)
        let latency = try metrics.expectTimer("netres.action.latency", [("kind", "register")])
        #expect(latency.values == [0])  // submitted and started at the same manual instant
        let duration = try metrics.expectTimer("netres.action.duration", [("kind", "register")])
        #expect(duration.values.count == 2)
    }
}
