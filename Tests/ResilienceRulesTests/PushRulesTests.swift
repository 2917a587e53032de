import ResilienceCore
import ResiliencePolicyFile
import ResilienceRules
import Testing

/// RFC 8599 push in the default policy: suspended with a token is asleep (flow released), a push
/// registers at once in every state, the end of the wake window puts the account back to sleep.
struct PushRulesTests {
    let t0 = Fixtures.t0
    /// One account with a registration and a subscription, no call; a second account beside it.
    let services = [
        ClientService(id: "alice.reg", kind: .registration, account: "alice", expires: Fixtures.t0),
        ClientService(id: "alice.mwi", kind: .subscription(.messageSummary), account: "alice", expires: Fixtures.t0),
        ClientService(id: "bob.reg", kind: .registration, account: "bob", expires: Fixtures.t0),
    ]

    func engine(in state: AppState, pushAccounts: Set<String>) -> RulesEngine {
        var engine = RulesEngine(appState: state)
        engine.pushAccounts = pushAccounts
        return engine
    }

    @Test func suspendingWithAPushTokenReleasesTheFlowAndWithoutOneDoesNothing() {
        var withToken = engine(in: .background, pushAccounts: ["alice"])
        #expect(
            Fixtures.render(withToken.decide(.app(.suspending), services: services, at: t0)) == "alice.reg:release-flow"
        )
        var withoutToken = engine(in: .background, pushAccounts: [])
        #expect(withoutToken.decide(.app(.suspending), services: services, at: t0).isEmpty)
    }

    @Test func anAccountWithACallKeepsItsFlowWhenSuspending() {
        var engine = engine(in: .background, pushAccounts: ["alice"])
        let withCall = services + [ClientService(id: "alice.call", kind: .call(.incoming, .active), account: "alice")]
        #expect(engine.decide(.app(.suspending), services: withCall, at: t0).isEmpty)
    }

    @Test(arguments: AppState.allCases, PushKind.allCases)
    func aPushRegistersOnlyThePushedAccountFirstInEveryState(state: AppState, kind: PushKind) throws {
        var engine = engine(in: state, pushAccounts: ["alice", "bob"])
        let batch = engine.decide(.push(try Push(account: "alice", kind: kind)), services: services, at: t0)
        #expect(batch.first?.kind == .register)
        #expect(batch.first?.service == "alice.reg")
        #expect(!batch.contains { $0.service == "bob.reg" })
        // Awake, the subscription follows its registration; suspended, only the registration.
        let subscribes = batch.filter { $0.kind == .subscribe }
        #expect(subscribes.map(\.service) == (state == .suspended ? [] : ["alice.mwi"]))
        #expect(subscribes.allSatisfy { $0.after.contains("alice.reg") })
        #expect(batch.first?.trigger.name == "push.received.\(kind.rawValue)")
    }

    @Test func theEndOfTheWakeWindowReleasesTheFlowOnlyWhileSuspendedWithATokenAndNoCall() {
        let ended = Trigger.pushWindowEnded(account: "alice")
        var suspended = engine(in: .suspended, pushAccounts: ["alice", "bob"])
        #expect(Fixtures.render(suspended.decide(ended, services: services, at: t0)) == "alice.reg:release-flow")
        var background = engine(in: .background, pushAccounts: ["alice"])
        #expect(background.decide(ended, services: services, at: t0).isEmpty)
        var noToken = engine(in: .suspended, pushAccounts: ["bob"])
        #expect(noToken.decide(ended, services: services, at: t0).isEmpty)
        var inCall = engine(in: .suspended, pushAccounts: ["alice"])
        let withCall = services + [ClientService(id: "alice.call", kind: .call(.incoming, .alerting), account: "alice")]
        #expect(inCall.decide(ended, services: withCall, at: t0).isEmpty)
    }

    @Test func releasingAFlowIsLocalSoItIsPlannedWhileTheNetworkIsLost() {
        var engine = RulesEngine(appState: .background, networkAvailable: false)
        engine.pushAccounts = ["alice"]
        #expect(
            Fixtures.render(engine.decide(.app(.suspending), services: services, at: t0)) == "alice.reg:release-flow")
    }

    @Test func thePolicyFileNamesPushTriggersAndConditions() {
        #expect(TriggerPattern("push.received") != nil)
        #expect(TriggerPattern("push.received.message") != nil)
        #expect(TriggerPattern("push.window-ended") != nil)
        #expect(RuleCondition(rawValue: "push-available") == .pushAvailable)
        #expect(RuleCondition(rawValue: "no-call") == .noCall)
        #expect(Policy.default.pushWakeWindow == .seconds(10))
    }

    @Test func policyExplainShowsSleepWithATokenAndNothingWithout() {
        let registration = [ClientService(id: "alice.reg", kind: .registration, account: "alice")]
        let asleep = PolicyExplainer.explain(
            policy: .default, state: .background, trigger: .app(.suspending), services: registration, at: t0)
        #expect(asleep.services.first?.actions.map(\.action) == ["release-flow"])
        #expect(asleep.stateAfter == "suspended")
        let awake = PolicyExplainer.explain(
            policy: .default, state: .background, trigger: .app(.suspending), services: registration, at: t0,
            pushToken: false)
        #expect(awake.services.first?.actions.isEmpty == true)
        #expect(PolicyExplainer.trigger(named: "push.received.message", services: registration) != nil)
    }
}
