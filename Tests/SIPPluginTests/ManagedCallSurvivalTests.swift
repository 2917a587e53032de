import Logging
import NetworkLab
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

@testable import SIPPlugin

/// Issue 20's "the survival budget set through the library API takes effect", as a library user
/// runs it: `Policy(callSurvivalBudget:)` → `ResilienceManager` → `PluginContext.callSurvivalBudget`
/// with the policy's `restore-reinvite` action → the real `SIPPlugin` → sipp as the far end on
/// loopback. The call is placed through the plugin's call API; the plugin reports it to the
/// manager as a service; the path (a `ScriptedNetworkSource`) is lost for a real 1.5 s and comes
/// back; the manager hands the loss (`PluginContext.lastPathLoss`) and the budget to the plugin.
///
/// The same loss ends the call under a 1 s budget and is recovered under a 20 s one. The
/// plugin's own default budget is 30 s, so the first case fails when the policy's budget does
/// not reach the call. No timing is asserted: the loss lasts at least 1.5 s (a sleep), and every
/// wait is a hang guard.
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct ManagedCallSurvivalTests {
    /// How long the path stays lost: longer than the short budget, far shorter than the long one.
    static let loss = Duration.milliseconds(1_500)

    /// A manager running the default rules with `budget` over the plugin of one account whose
    /// outbound proxy is sipp (running `scenario`), a call from it to sipp, and the call's events.
    struct Lab {
        let sipp: SIPpHarness
        let plugin: SIPPlugin
        let account: SIPAccount
        let network: ScriptedNetworkSource
        let events: EventRecorder<ResilienceEvent>
        let calls: SIPCallSIPpTests.Recorder
        let call: CallID

        /// Loses the path, waits for the loss to be decided (else the manager coalesces the
        /// flap), keeps it lost for `loss`, restores it and returns the policy's action on the
        /// call once the plugin has carried it out.
        func loseThePath(for loss: Duration) async throws -> ActionEvent {
            await network.lose(.noCarrier)
            try await events.wait("the loss decided") {
                $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) }
            }
            try await Task.sleep(for: loss)
            await network.restore(loopbackPath())
            let service = account.callService(call)
            let done = try await events.first("the call's action after the return") {
                guard let action = $0.action, action.action.service == service else { return false }
                return action.outcome != .started
            }
            return try #require(done.action)
        }
    }

    func withManagedCall(_ scenario: String, budget: Duration, _ body: (Lab) async throws -> Void) async throws {
        let sipp = try await SIPpHarness.start(scenario: scenario)
        defer { sipp.stop() }
        let user = uniqueUser("managed")
        let account = sipp.account(user: user)
        let logger = testLogger(user)
        let plugin = SIPPlugin(accounts: [account], logger: logger)
        let calls = SIPCallSIPpTests.Recorder(try #require(plugin.agent(for: user)))
        let network = ScriptedNetworkSource(path: loopbackPath())
        // Only the budget and a zero hold-down differ from the default policy. The account's
        // registration is not given to the manager: sipp is only the far end of the call.
        let manager = ResilienceManager(
            source: network, policy: Policy(holdDown: .zero, callSurvivalBudget: budget), plugins: [plugin],
            logger: logger)
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: logger)
        let running = Task { try await group.run() }
        defer { running.cancel() }
        try await events.wait("started") { $0.contains { $0.decision?.trigger == .started } }
        let call = try await plugin.placeCall(
            account: user, to: "sip:far@127.0.0.1:\(sipp.port)", path: await manager.status().path)
        let service = account.callService(call)
        let known = await eventually(within: .seconds(10)) {
            await manager.status().services.contains { $0.id == service && $0.kind == .call(.outgoing, .active) }
        }
        try #require(known, "the plugin reported the active call to the manager")
        try await body(
            Lab(
                sipp: sipp, plugin: plugin, account: account, network: network, events: events, calls: calls,
                call: call))
        await group.triggerGracefulShutdown()
        try await running.value
    }

    @Test func aCallLostLongerThanThePolicysBudgetIsEndedWithByeWhenThePathReturns() async throws {
        try await withManagedCall("uas-answer-bye", budget: .seconds(1)) { lab in
            let action = try await lab.loseThePath(for: Self.loss)
            #expect(action.action.kind == .reinviteCall && action.outcome == .succeeded, "\(action)")
            let ended = await lab.calls.events(until: { $0.phase == .ended }).last
            #expect(ended?.trigger == "outage" && ended?.reason == "outage", "\(String(describing: ended))")
            #expect(try #require(ended?.downtime) >= Self.loss)
            #expect(await lab.plugin.calls(of: lab.account.name).isEmpty)
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("BYE") == 1)
            #expect(lab.sipp.received("INVITE") == 1, "no re-INVITE for a call over its budget")
        }
    }

    @Test func aCallLostShorterThanThePolicysBudgetIsRecoveredWithAReinvite() async throws {
        try await withManagedCall("uas-recover", budget: .seconds(20)) { lab in
            let action = try await lab.loseThePath(for: Self.loss)
            #expect(action.action.kind == .reinviteCall && action.outcome == .succeeded, "\(action)")
            let recovered = await lab.calls.events(until: { $0.trigger == "network" }).last
            #expect(recovered?.phase == .active, "\(String(describing: recovered))")
            #expect(try #require(recovered?.downtime) >= Self.loss)
            #expect(await lab.plugin.calls(of: lab.account.name)[lab.call] == .active)
            try await lab.plugin.hangUp(lab.call, account: lab.account.name, path: loopbackPath())
            #expect(await lab.sipp.exitStatus(within: 30) == 0, "sipp: \(lab.sipp.errors.suffix(800))")
            #expect(lab.sipp.received("INVITE") == 2, "the call's INVITE and the recovery's re-INVITE")
            #expect(lab.sipp.received("BYE") == 1, "only the hang-up's BYE")
        }
    }
}
