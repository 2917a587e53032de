import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// `Policy.callSurvivalBudget` has one source: the policy the manager was given, handed to the
/// plugins with every action (`PluginContext.callSurvivalBudget`), so a library user who sets it
/// in the policy gets it applied by the SIP plugin without a second setting.
@Suite(.timeLimit(.minutes(3)))
struct CallSurvivalBudgetTests {
    let clock = ManualClock()

    @Test func thePolicysBudgetReachesEveryActionOfThePlugin() async throws {
        let source = ScriptedNetworkSource(clock: clock)
        let sip = RecordingPlugin(id: "sip", actions: Set(ActionKind.builtIn).subtracting([.drainHTTP]))
        let manager = ResilienceManager(
            source: source, policy: Policy(holdDown: .zero, callSurvivalBudget: .seconds(7)), plugins: [sip],
            clock: clock, configuration: .init(randomSeed: 7), logger: quiet, decide: testDecide)
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        await source.lose(.noCarrier)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        await source.restore()
        _ = try await events.wait { $0.contains { $0.action?.isSucceeded == true } }
        #expect(!sip.starts.isEmpty)
        #expect(sip.starts.allSatisfy { $0.callSurvivalBudget == .seconds(7) })
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
