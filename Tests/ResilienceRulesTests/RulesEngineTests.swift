import ResilienceCore
import ResilienceRules
import Testing

struct RulesEngineTests {
    let t0 = Fixtures.t0

    @Test func lossPlansNothingAndLaterTriggersPlanOnlyLocalActions() {
        var engine = RulesEngine()
        #expect(engine.decide(.network(.lost(.noCarrier)), services: Fixtures.services, at: t0).isEmpty)
        #expect(!engine.networkAvailable)
        let background = engine.decide(.app(.enteredBackground), services: Fixtures.services, at: t0)
        #expect(Fixtures.render(background) == "http:drain-http")
        #expect(engine.appState == .background)
        #expect(engine.decide(.shutdown, services: Fixtures.services, at: t0).isEmpty)
        #expect(engine.decide(.pushTokenChanged, services: Fixtures.services, at: t0).isEmpty)
        let restored = engine.decide(.network(.restored), services: Fixtures.services, at: t0)
        #expect(engine.networkAvailable)
        #expect(restored.first?.kind == .register)
    }

    @Test func interruptionEndedResumesOnlyTheCallsTheInterruptionHeld() {
        var engine = RulesEngine()
        var services = Fixtures.services
        let holds = engine.decide(.app(.interrupted), services: services, at: t0)
        #expect(Fixtures.render(holds) == "act:hold-call")
        let index = services.firstIndex { $0.id == "act" }!
        // The plugin owns why a call is held: it reports this one held for the interruption.
        services[index].kind = .call(.outgoing, .held)
        services[index].heldByInterruption = true
        let resumes = engine.decide(.app(.interruptionEnded), services: services, at: t0)
        // "held" was held by the user before the interruption: it stays held.
        #expect(Fixtures.render(resumes) == "act:resume-call")
        // Resumed, the plugin reports it active and held for nothing: nothing more to resume.
        services[index].kind = .call(.outgoing, .active)
        services[index].heldByInterruption = false
        _ = engine.decide(.app(.interrupted), services: services, at: t0)
        #expect(engine.decide(.app(.interruptionEnded), services: services, at: t0).isEmpty)
    }

    @Test func anInterruptionThatEndsOfflineResumesOnTheNextRestore() {
        var engine = RulesEngine()
        var services = Fixtures.services
        Fixtures.interrupt(&engine, &services)
        // Restored while the interruption lasts: the call is re-INVITEd but stays held.
        let during = engine.decide(.network(.changed(.defaultRoute)), services: services, at: t0)
        #expect(during.contains { $0.service == "act" && $0.kind == .reinviteCall })
        #expect(!during.contains { $0.kind == .resumeCall })
        _ = engine.decide(.network(.lost(.noCarrier)), services: services, at: t0)
        #expect(engine.decide(.app(.interruptionEnded), services: services, at: t0).isEmpty)
        let restored = engine.decide(.network(.restored), services: services, at: t0)
        let forCalls = restored.filter { ["act", "held", "rheld"].contains($0.service) }
        #expect(Fixtures.render(forCalls) == "act:resume-call<reg held:reinvite-call<reg rheld:reinvite-call<reg")
    }

    @Test func aCallTheUserResumedDuringTheInterruptionIsForgotten() {
        var engine = RulesEngine()
        var services = Fixtures.services
        Fixtures.interrupt(&engine, &services)
        let index = services.firstIndex { $0.id == "act" }!
        // The user resumed it during the interruption: the plugin reports it held for nothing.
        services[index].kind = .call(.outgoing, .active)
        services[index].heldByInterruption = false
        _ = engine.decide(.callStateChanged("act"), services: services, at: t0)
        #expect(engine.decide(.app(.interruptionEnded), services: services, at: t0).isEmpty)
        _ = engine.decide(.app(.interrupted), services: services, at: t0)
        services.remove(at: index)
        #expect(engine.decide(.app(.interruptionEnded), services: services, at: t0).isEmpty)
    }

    @Test func theRulesResumeOnlyTheCallsThePluginReportsHeldByAnInterruption() {
        // The plugin's hold reasons are the one record: the rules keep no table of their own.
        var engine = RulesEngine()
        var services = Fixtures.services
        _ = engine.decide(.app(.interrupted), services: services, at: t0)
        // "held" is held by the user: the interruption's end leaves it alone.
        #expect(engine.decide(.app(.interruptionEnded), services: services, at: t0).isEmpty)
        _ = engine.decide(.app(.interrupted), services: services, at: t0)
        let held = services.firstIndex { $0.id == "held" }!
        services[held].heldByInterruption = true
        let during = engine.decide(.network(.changed(.address)), services: services, at: t0)
        #expect(!during.contains { $0.kind == .resumeCall }, "never while the interruption lasts")
        let resumes = engine.decide(.app(.interruptionEnded), services: services, at: t0)
        #expect(Fixtures.render(resumes) == "held:resume-call")
    }

    @Test func freshRegistrationsAreNotRefreshedOnResume() {
        let fresh = t0 + .seconds(3600)
        let services = Fixtures.services.map { service in
            var copy = service
            if copy.expires != nil { copy.expires = copy.id == "dialog" ? t0 + .seconds(600) : fresh }
            return copy
        }
        var engine = RulesEngine(appState: .suspended)
        // 600 s expiry is inside the minimum wake-up interval (600 s) plus the margin (30 s).
        #expect(
            Fixtures.render(engine.decide(.app(.resumed), services: services, at: t0)) == "dialog:refresh-subscription")
        #expect(engine.appState == .background)
    }

    @Test func refreshDueRefreshesOnlyTheListedServices() {
        var engine = RulesEngine(appState: .background)
        let batch = engine.decide(.refreshDue(["reg", "mwi", "others"]), services: Fixtures.services, at: t0)
        #expect(Fixtures.render(batch) == "reg:refresh-registration mwi:refresh-subscription<reg")
    }

    @Test func startedWithTheNetworkDownPlansNothingThatNeedsIt() {
        var engine = RulesEngine(networkAvailable: false)
        #expect(engine.decide(.started, services: Fixtures.services, at: t0).isEmpty)
        let restored = engine.decide(.network(.restored), services: Fixtures.services, at: t0)
        #expect(restored.contains { $0.service == "reg" && $0.kind == .register })
    }

    @Test func flowLostActsOnlyOnTheListedServices() {
        var engine = RulesEngine(appState: .background)
        // Others' presence is listed but stopped in background (level none).
        let batch = engine.decide(.flowLost(["dialog", "others"]), services: Fixtures.services, at: t0)
        #expect(Fixtures.render(batch) == "dialog:subscribe")
        #expect(engine.decide(.flowLost([]), services: Fixtures.services, at: t0).isEmpty)
        #expect(engine.decide(.flowPingDue(["mwi"]), services: Fixtures.services, at: t0).isEmpty)
    }

    @Test func dueDoesNotHoldForFlowTriggers() {
        let rule = Rule("r", on: [.named("flow")], for: [.registration], if: [.due], do: [.register])
        var engine = RulesEngine(policy: Policy(levels: [], rules: [rule]))
        #expect(engine.decide(.flowLost(["reg"]), services: Fixtures.services, at: t0).isEmpty)
    }

    @Test func registrationOrdersOnlyItsOwnAccount() {
        let services = [
            ClientService(id: "a.sub", kind: .subscription(.dialog), account: "a"),
            ClientService(id: "b.sub", kind: .subscription(.dialog), account: "b"),
            ClientService(id: "a.reg", kind: .registration, account: "a"),
            ClientService(id: "b.reg", kind: .registration, account: "b"),
        ]
        var engine = RulesEngine()
        let batch = engine.decide(.network(.restored), services: services, at: t0)
        #expect(Fixtures.render(batch) == "a.reg:register b.reg:register a.sub:subscribe<a.reg b.sub:subscribe<b.reg")
        let shutdown = engine.decide(.shutdown, services: services, at: t0)
        #expect(
            Fixtures.render(shutdown)
                == "a.sub:unsubscribe b.sub:unsubscribe a.reg:unregister<a.sub b.reg:unregister<b.sub")
    }

    @Test func aFileRuleCanRunALocalActionOnLossButNothingThatNeedsTheNetwork() {
        var policy = Policy.default
        policy.rules.append(
            Rule("local", on: [.named("network")], for: [.registration], do: [.closeStaleTransports, .pingFlow]))
        var engine = RulesEngine(policy: policy)
        let batch = engine.decide(.network(.lost(.adminDown)), services: Fixtures.services, at: t0)
        #expect(Fixtures.render(batch) == "reg:close-stale-transports")
        let restored = engine.decide(.network(.restored), services: Fixtures.services, at: t0)
        #expect(restored.contains { $0.kind == .pingFlow && $0.source.hasPrefix("rule local;") })
    }

    @Test func aPluginsDeclaredLocalActionIsPlannedDuringALossAndAnUndeclaredOneIsNot() {
        let flush: ActionKind = "vendor.flush-cache"
        var policy = Policy.default
        policy.rules.append(Rule("flush", on: [.named("network")], for: [.registration], do: [flush]))
        var local = RulesEngine(policy: policy, localActions: [flush])
        #expect(
            Fixtures.render(local.decide(.network(.lost(.noCarrier)), services: Fixtures.services, at: t0))
                == "reg:\(flush)")
        var networked = RulesEngine(policy: policy)
        #expect(networked.decide(.network(.lost(.noCarrier)), services: Fixtures.services, at: t0).isEmpty)
    }

    @Test func levelsPickTheMostSpecificRow() {
        var policy = Policy.default
        policy.levels.append(ServiceLevelRow(.any, foreground: .none, background: .none))
        policy.levels.append(
            ServiceLevelRow(ServiceSelector(name: "call.outgoing.held")!, foreground: .full, background: .full))
        let engine = RulesEngine(policy: policy)
        #expect(engine.level(of: ClientService(id: "c", kind: .call(.outgoing, .held)), in: .background) == .full)
        #expect(
            engine.level(of: ClientService(id: "c", kind: .call(.incoming, .held)), in: .background) == .signalingOnly)
        #expect(engine.level(of: ClientService(id: "r", kind: .registration), in: .background) == .full)
    }

    @Test func selectorNamesRoundTrip() {
        for name in ServiceSelector.allNames {
            #expect(ServiceSelector(name: name)?.name == name)
        }
        #expect(ServiceSelector(name: "call.held.outgoing") == nil)
        #expect(ServiceSelector(name: "subscription.") == nil)
    }
}
