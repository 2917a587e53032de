import ResilienceCore
import ResiliencePolicyFile
import ResilienceRules
import Testing

struct PolicyExplainerTests {
    @Test(arguments: AppState.allCases)
    func everyTriggerNameExplainsEveryRepresentativeService(state: AppState) throws {
        let services = PolicyExplainer.representativeServices(expiringAt: Fixtures.t0)
        #expect(services.count == 15)
        #expect(Set(services.map(\.id)).count == services.count)
        for name in TriggerPattern.concreteNames {
            let trigger = try #require(PolicyExplainer.trigger(named: name, services: services))
            #expect(trigger.name == name)
            let explanation = PolicyExplainer.explain(
                policy: .default, state: state, trigger: trigger, services: services, at: Fixtures.t0)
            #expect(explanation.services.map(\.id) == services.map(\.id.rawValue))
            let orders = explanation.services.flatMap(\.actions).map(\.order).sorted()
            #expect(orders == Array(orders.indices.map { $0 + 1 }))
        }
    }

    @Test func interruptionEndedIsExplainedAfterAnInterruption() throws {
        let services = PolicyExplainer.representativeServices(expiringAt: Fixtures.t0)
        let explanation = PolicyExplainer.explain(
            policy: .default, state: .background, trigger: .app(.interruptionEnded), services: services,
            at: Fixtures.t0)
        #expect(explanation.setup == ["app.interrupted held: call.outgoing.active"])
        let resumed = explanation.services.filter { $0.actions.contains { $0.action == "resume-call" } }.map(\.id)
        #expect(resumed == ["call.outgoing.active"])
    }

    @Test func flowLostIsExplainedForEveryRegistrationAndSubscription() throws {
        let services = PolicyExplainer.representativeServices(expiringAt: Fixtures.t0)
        let trigger = try #require(PolicyExplainer.trigger(named: "flow.lost", services: services))
        let explanation = PolicyExplainer.explain(
            policy: .default, state: .foreground, trigger: trigger, services: services, at: Fixtures.t0)
        let acted = explanation.services.filter { !$0.actions.isEmpty }
        #expect(acted.first?.actions.map(\.action) == ["register"])
        #expect(acted.dropFirst().allSatisfy { $0.actions.map(\.action) == ["subscribe"] })
        #expect(acted.count == 1 + EventPackage.allCases.count)
    }

    @Test func unknownTriggerNamesResolveToNothing() {
        #expect(PolicyExplainer.trigger(named: "network.gone", services: []) == nil)
        #expect(PolicyExplainer.trigger(named: "app.sleeping", services: []) == nil)
        #expect(PolicyExplainer.trigger(named: "network.changed", services: []) == .network(.changed(.address)))
    }
}
