import Foundation
import MetricsTestKit
import ResilienceCore
import Testing

@testable import SIPPlugin

/// The call survival budget and observable recoveries: the pure rule, then the plugin's
/// `reinvite-call` against sipp with the executor's `lastPathLoss` in the context, the call
/// events it reports and the metrics it records.
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SIPCallSurvivalTests {
    static let t0 = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .milliseconds(Int(seconds * 1000)) }

    /// Loss (from, to), the call's creation, the loss it last survived, budget → downtime over budget.
    static let cases: [(Double, Double, Double, Double?, Double, Double?)] = [
        (10, 50, 0, nil, 30, 40),  // lived through 40 s of a 30 s budget: ended
        (10, 30, 0, nil, 30, nil),  // 20 s: survives
        (10, 50, 0, nil, 0, nil),  // budget 0: forever
        (10, 50, 20, nil, 25, 30),  // created during the loss: only its 30 s count
        (10, 50, 60, nil, 1, nil),  // the loss was over before the call existed
        (10, 50, 0, 50, 1, nil),  // already judged (recovered from) once
    ]

    @Test(arguments: 0..<cases.count)
    func theBudgetEndsOnlyCallsThatLivedThroughALongerLoss(index: Int) {
        let (from, to, created, survived, budget, expected) = Self.cases[index]
        let downtime = CallSurvival.exceeded(
            loss: Self.at(from)..<Self.at(to), createdAt: Self.at(created), survivedUntil: survived.map(Self.at),
            budget: .seconds(budget))
        #expect(downtime == expected.map { .milliseconds(Int($0 * 1000)) })
    }

    /// A call placed through the plugin of one account to sipp running `scenario`, with the
    /// plugin's call metrics in `metrics` and its call events in `recorder`.
    struct CallLab {
        let sipp: SIPpHarness
        let metrics: TestMetrics
        let plugin: SIPPlugin
        let account: SIPAccount
        let agent: SIPUserAgent
        let recorder: SIPCallSIPpTests.Recorder
        let call: CallID
        /// The policy's `call-survival-budget`, as the manager hands it with every action.
        let budget: Duration

        /// The policy's `reinvite-call` for the call, with `loss` as the context's last loss and
        /// the budget in the context (the one source of the budget: the policy, via the action).
        func reinviteCall(after loss: Range<ContinuousClock.Instant>? = nil) async throws {
            var lent = context()
            lent.lastPathLoss = loss
            lent.callSurvivalBudget = budget
            try await plugin.perform(action(.reinviteCall, account.callService(call)), context: lent)
        }
    }

    func withCall(_ scenario: String, budget: Duration, _ body: (CallLab) async throws -> Void) async throws {
        let sipp = try await SIPpHarness.start(scenario: scenario)
        defer { sipp.stop() }
        let user = uniqueUser("survivor")
        let account = sipp.account(user: user)
        let metrics = TestMetrics()
        let plugin = SIPPlugin(
            accounts: [account], metricsFactory: metrics, logger: testLogger(user))
        let agent = try #require(plugin.agent(for: account.name))
        let recorder = SIPCallSIPpTests.Recorder(agent)
        let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
        try await body(
            CallLab(
                sipp: sipp, metrics: metrics, plugin: plugin, account: account, agent: agent, recorder: recorder,
                call: call, budget: budget))
        await agent.close()
    }

    /// A loss that really lasts `duration` after the call is up (a sleep: the downtime the
    /// plugin reports is then exactly the range's length, not a timing assertion).
    func loss(lasting duration: Duration) async throws -> Range<ContinuousClock.Instant> {
        let start = ContinuousClock.now
        try await Task.sleep(for: duration)
        return start..<ContinuousClock.now
    }

    @Test func aCallLostLongerThanTheBudgetIsEndedWithByeAndReportedWithItsDowntime() async throws {
        try await withCall("uas-answer-bye", budget: .seconds(1)) { lab in
            let loss = try await loss(lasting: .milliseconds(1_500))
            try await lab.reinviteCall(after: loss)
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("BYE") == 1)
            #expect(lab.sipp.received("INVITE") == 1, "no re-INVITE for a call over its budget")
            let ended = await lab.recorder.events(until: { $0.phase == .ended }).last
            #expect(ended?.trigger == "outage" && ended?.reason == "outage")
            #expect(ended?.downtime == loss.upperBound - loss.lowerBound)
            #expect(await lab.agent.activeCalls.isEmpty)
            #expect(try lab.metrics.expectCounter("netres.calls.lost", [("reason", "outage")]).totalValue == 1)
        }
    }

    @Test func aCallLostShorterThanTheBudgetIsRecoveredAndTheRecoveryIsMeasured() async throws {
        try await withCall("uas-recover", budget: .seconds(30)) { lab in
            let loss = try await loss(lasting: .milliseconds(200))
            try await lab.reinviteCall(after: loss)
            let recovered = try #require(await lab.recorder.events(until: { $0.trigger == "network" }).last)
            #expect(recovered.phase == .active && recovered.call == lab.call)
            #expect(recovered.downtime == loss.upperBound - loss.lowerBound)
            let roundTrip = try #require(recovered.reinviteRoundTrip)
            let recoveryTime = try #require(recovered.recoveryTime)
            #expect(roundTrip > .zero && recoveryTime >= roundTrip, "recovery spans the re-INVITE")
            #expect(try lab.metrics.expectCounter("netres.calls.recovered").totalValue == 1)
            #expect(try lab.metrics.expectTimer("netres.call.recovery").values.count == 1)
            try await lab.agent.hangUp(lab.call, path: loopbackPath())
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("INVITE") == 2)
            #expect(try lab.metrics.expectCounter("netres.calls.lost", [("reason", "outage")]).totalValue == 0)
        }
    }

    @Test func aFarEndThatAllowsUpdateIsRecoveredWithAnUpdateNotAReinvite() async throws {
        try await withCall("uas-update", budget: .seconds(30)) { lab in
            try await lab.reinviteCall()
            let recovered = try #require(await lab.recorder.events(until: { $0.trigger == "network" }).last)
            #expect(recovered.phase == .active)
            #expect(recovered.downtime == nil, "an address change without a loss has no downtime")
            #expect(recovered.reinviteRoundTrip != nil)
            try await lab.agent.hangUp(lab.call, path: loopbackPath())
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("UPDATE") == 1)
            #expect(lab.sipp.received("INVITE") == 1, "no re-INVITE beside the UPDATE")
            #expect(try lab.metrics.expectCounter("netres.calls.recovered").totalValue == 1)
        }
    }

    @Test func aGlaredUpdateIsRetriedAfterTheRFCWaitAndTheRetriesAreReported() async throws {
        try await withCall("uas-update-glare", budget: .seconds(30)) { lab in
            let start = ContinuousClock.now
            try await lab.reinviteCall()
            // We placed the call (we own the Call-ID): at least 2.1 s (a floor, not a speed check).
            #expect(ContinuousClock.now - start >= .milliseconds(2_100))
            let recovered = try #require(await lab.recorder.events(until: { $0.trigger == "network" }).last)
            #expect(recovered.glareRetries == 1)
            #expect(recovered.phase == .active)
            try await lab.agent.hangUp(lab.call, path: loopbackPath())
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("UPDATE") == 2)
        }
    }

    @Test func a481ToTheRecoveryReportsTheCallLostWithoutBye() async throws {
        try await withCall("uas-481", budget: .seconds(30)) { lab in
            await #expect(throws: PluginError.self) { try await lab.reinviteCall() }
            let ended = await lab.recorder.events(until: { $0.phase == .ended }).last
            #expect(ended?.reason == "481")
            #expect(!lab.plugin.performs(.reinviteCall, for: lab.account.callService(lab.call)), "service removed")
            let lost = try lab.metrics.expectCounter("netres.calls.lost", [("reason", "481")])
            let recovered = try lab.metrics.expectCounter("netres.calls.recovered")
            #expect(lost.totalValue == 1 && recovered.totalValue == 0)
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("BYE") == 0)
        }
    }

    @Test func anyOtherFailureOfTheRecoveryKeepsTheOldSession() async throws {
        try await withCall("uas-reinvite-500", budget: .seconds(30)) { lab in
            await #expect(throws: PluginError.self) { try await lab.reinviteCall() }
            #expect(await lab.agent.activeCalls[lab.call] == .active, "RFC 6141: the session goes on")
            try await lab.agent.hangUp(lab.call, path: loopbackPath())
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("BYE") == 1, "only the hang-up's BYE")
            let ended = await lab.recorder.events(until: { $0.phase == .ended }).last
            #expect(ended?.reason == "BYE" && ended?.trigger == "api")
        }
    }
}
