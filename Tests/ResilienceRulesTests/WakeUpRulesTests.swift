import ResilienceCore
import ResilienceRules
import Testing

/// The rules answer whether a refresh or ping wake-up would do anything in the current state:
/// the runtime's reason to let a suspended service sleep, asked of the policy, not a table.
struct WakeUpRulesTests {
    /// A registration whose refresh falls due in an hour (not stale now).
    let registration = ClientService(
        id: "alice.reg", kind: .registration, account: "alice", expires: Fixtures.t0 + .seconds(3600),
        flowPingInterval: .seconds(30))

    /// Whether the refresh wake-up, then the ping wake-up, would plan anything.
    func answers(_ policy: Policy, in state: AppState) -> [Bool] {
        let engine = RulesEngine(policy: policy, appState: state)
        return [
            engine.refreshWakeUpPlansAnything(for: registration, among: [registration], at: Fixtures.t0),
            engine.pingWakeUpPlansAnything(for: registration, among: [registration], at: Fixtures.t0),
        ]
    }

    @Test(arguments: [AppState.foreground, .background])
    func theDefaultPolicyActsOnRefreshAndPingWakeUpsAwake(state: AppState) {
        #expect(answers(.default, in: state) == [true, true])
    }

    @Test func theDefaultPolicyActsOnNeitherWakeUpSuspended() {
        #expect(answers(.default, in: .suspended) == [false, false])
    }

    /// `stale` is judged when the refresh falls due (at its expiry), not an hour before it.
    @Test func aSuspendedRowRefreshingStaleRegistrationsWakesForTheRefreshOnly() {
        var policy = Policy.default
        policy.rules.append(
            Rule(
                "suspended-refresh", on: [.named("refresh.due")], when: [.suspended], for: [.registration],
                if: [.due, .stale], do: [.refreshRegistration]))
        #expect(answers(policy, in: .suspended) == [true, false])
    }

    @Test func aSuspendedPingRowWakesForThePingOnly() {
        var policy = Policy.default
        policy.rules.append(
            Rule(
                "suspended-ping", on: [.named("flow.ping-due")], when: [.suspended], for: [.registration],
                if: [.affected], do: [.pingFlow]))
        #expect(answers(policy, in: .suspended) == [false, true])
    }

    @Test func aWakeUpWhileTheNetworkIsLostPlansNothingThatNeedsIt() {
        let engine = RulesEngine(appState: .background, networkAvailable: false)
        #expect(!engine.refreshWakeUpPlansAnything(for: registration, among: [registration], at: Fixtures.t0))
    }
}
