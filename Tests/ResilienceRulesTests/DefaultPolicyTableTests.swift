import ResilienceCore
import ResilienceRules
import Testing

/// The default policy, trigger by trigger and state by state, over one service of every kind
/// (see ``Fixtures``). Each expected batch is written out: `service:action<after`, in order.
/// Services a row does not name get no action. The seed's table is checked line by line in
/// ``levelsAreTheSeedTable(service:foreground:background:)``.
struct DefaultPolicyTableTests {
    // Restored: register, resubscribe all, re-INVITE established calls, ring a ringing outgoing
    // call again, publish, reopen HTTP.
    static let restoredForeground =
        "reg:register self:subscribe<reg others:subscribe<reg regev:subscribe<reg dialog:subscribe<reg "
        + "mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg act:reinvite-call<reg held:reinvite-call<reg "
        + "rheld:reinvite-call<reg out:reinvite-call<reg pub:publish-presence<reg http:open-http"
    // Background: no others' presence, no publish, no HTTP.
    static let restoredBackground =
        "reg:register self:subscribe<reg regev:subscribe<reg dialog:subscribe<reg "
        + "mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg act:reinvite-call<reg held:reinvite-call<reg "
        + "rheld:reinvite-call<reg out:reinvite-call<reg"
    // A new address: close stale transports, register the new Contact, then drop the old one.
    static let newAddressForeground =
        "reg:close-stale-transports reg:register reg:unregister-old-contact self:subscribe<reg others:subscribe<reg "
        + "regev:subscribe<reg dialog:subscribe<reg mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg "
        + "act:reinvite-call<reg held:reinvite-call<reg rheld:reinvite-call<reg out:reinvite-call<reg "
        + "pub:publish-presence<reg http:open-http"
    static let newAddressBackground =
        "reg:close-stale-transports reg:register reg:unregister-old-contact self:subscribe<reg "
        + "regev:subscribe<reg dialog:subscribe<reg mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg "
        + "act:reinvite-call<reg held:reinvite-call<reg rheld:reinvite-call<reg out:reinvite-call<reg"
    // Everything is expired in the fixture, so "stale" selects every registration and subscription.
    static let refreshAllForeground =
        "reg:refresh-registration self:refresh-subscription<reg others:refresh-subscription<reg "
        + "regev:refresh-subscription<reg dialog:refresh-subscription<reg mwi:refresh-subscription<reg "
        + "ccs:refresh-subscription<reg feat:refresh-subscription<reg"
    static let refreshAllBackground =
        "reg:refresh-registration self:refresh-subscription<reg "
        + "regev:refresh-subscription<reg dialog:refresh-subscription<reg mwi:refresh-subscription<reg "
        + "ccs:refresh-subscription<reg feat:refresh-subscription<reg"
    // Back to foreground from background or suspended: resubscribe others' presence, reopen HTTP.
    static let foregroundFromBackground =
        "reg:refresh-registration others:subscribe<reg self:refresh-subscription<reg "
        + "regev:refresh-subscription<reg dialog:refresh-subscription<reg mwi:refresh-subscription<reg "
        + "ccs:refresh-subscription<reg feat:refresh-subscription<reg http:open-http"
    // Started: bring everything up that the state runs (the engine orders registration first).
    static let startedForeground =
        "reg:register self:subscribe<reg others:subscribe<reg regev:subscribe<reg dialog:subscribe<reg "
        + "mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg pub:publish-presence<reg http:open-http"
    // Background: no others' presence (level none), no publish, no HTTP.
    static let startedBackground =
        "reg:register self:subscribe<reg regev:subscribe<reg dialog:subscribe<reg "
        + "mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg"
    static let shutdownForeground =
        "http:drain-http self:unsubscribe others:unsubscribe regev:unsubscribe dialog:unsubscribe mwi:unsubscribe "
        + "ccs:unsubscribe feat:unsubscribe reg:unregister<ccs,dialog,feat,mwi,others,regev,self"
    // Others' presence and HTTP are already stopped in background.
    static let shutdownBackground =
        "self:unsubscribe regev:unsubscribe dialog:unsubscribe mwi:unsubscribe "
        + "ccs:unsubscribe feat:unsubscribe reg:unregister<ccs,dialog,feat,mwi,regev,self"

    // A push registers the pushed account at once in every state; awake, its subscriptions follow.
    static let pushForeground =
        "reg:register self:subscribe<reg others:subscribe<reg regev:subscribe<reg dialog:subscribe<reg "
        + "mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg"
    static let pushBackground =
        "reg:register self:subscribe<reg regev:subscribe<reg dialog:subscribe<reg "
        + "mwi:subscribe<reg ccs:subscribe<reg feat:subscribe<reg"

    static let table: [(String, foreground: String, background: String, suspended: String)] = [
        ("network.lost", "", "", ""),
        ("network.restored", restoredForeground, restoredBackground, ""),
        ("network.changed.address", newAddressForeground, newAddressBackground, ""),
        ("network.changed.default-route", restoredForeground, restoredBackground, ""),
        ("network.changed.interface-switched", newAddressForeground, newAddressBackground, ""),
        ("app.entered-background", "others:unsubscribe http:drain-http", "", ""),
        ("app.entered-foreground", refreshAllForeground, foregroundFromBackground, foregroundFromBackground),
        ("app.suspending", "", "", ""),
        ("app.resumed", refreshAllForeground, refreshAllBackground, refreshAllBackground),
        ("app.interrupted", "act:hold-call", "act:hold-call", ""),
        ("app.interruption-ended", "act:resume-call", "act:resume-call", ""),
        ("call.state-changed", "pub:publish-presence", "pub:publish-presence", ""),
        ("refresh.due", refreshAllForeground, refreshAllBackground, ""),
        ("push.token-changed", "reg:register", "reg:register", ""),
        ("push.received.call", pushForeground, pushBackground, "reg:register"),
        ("push.received.message", pushForeground, pushBackground, "reg:register"),
        ("push.received.refresh", pushForeground, pushBackground, "reg:register"),
        // Without a push token (the fixture's account has none) nothing sleeps: see PushRulesTests.
        ("push.window-ended", "", "", ""),
        ("started", startedForeground, startedBackground, ""),
        // The fixture's flow.lost lists reg and mwi; flow.ping-due lists reg.
        ("flow.lost", "reg:register mwi:subscribe<reg", "reg:register mwi:subscribe<reg", ""),
        ("flow.ping-due", "reg:ping-flow", "reg:ping-flow", ""),
        ("shutdown", shutdownForeground, shutdownBackground, ""),
    ]

    @Test func theTableCoversEveryTrigger() {
        #expect(Set(Self.table.map(\.0)) == Set(TriggerPattern.concreteNames))
        #expect(Set(Fixtures.triggers.keys) == Set(TriggerPattern.concreteNames))
    }

    @Test(arguments: table)
    func defaultPolicyBatches(trigger: String, foreground: String, background: String, suspended: String) {
        #expect(Fixtures.run(trigger, in: .foreground) == foreground, "foreground")
        #expect(Fixtures.run(trigger, in: .background) == background, "background")
        #expect(Fixtures.run(trigger, in: .suspended) == suspended, "suspended")
    }

    /// The seed's service table (ARCHITECTURE.md, "The service table"), one line per service kind.
    @Test(arguments: [
        (ServiceKind.registration, ServiceLevel.full, ServiceLevel.full),
        (.subscription(.reg), .full, .full),
        (.subscription(.dialog), .full, .full),
        (.subscription(.messageSummary), .full, .full),
        (.subscription(.ccsProfile), .full, .full),
        (.subscription(.featureStatus), .full, .full),
        (.subscription(.presenceSelf), .full, .full),
        (.subscription(.presenceOthers), .full, .none),
        (.presencePublish, .full, .none),
        (.call(.outgoing, .progressing), .full, .full),
        (.call(.incoming, .alerting), .full, .full),
        (.call(.outgoing, .active), .full, .full),
        (.call(.incoming, .active), .full, .full),
        (.call(.outgoing, .held), .full, .signalingOnly),
        (.call(.incoming, .held), .full, .signalingOnly),
        (.call(.outgoing, .remotelyHeld), .full, .full),
        (.call(.incoming, .remotelyHeld), .full, .full),
        (.http, .full, .none),
    ])
    func levelsAreTheSeedTable(service: ServiceKind, foreground: ServiceLevel, background: ServiceLevel) {
        let engine = RulesEngine()
        let client = ClientService(id: "s", kind: service)
        #expect(engine.level(of: client, in: .foreground) == foreground)
        #expect(engine.level(of: client, in: .background) == background)
        #expect(engine.level(of: client, in: .suspended) == background)
    }

    @Test func presencePublishRunsInBackgroundOnlyOnCallStateChange() {
        let pub = ClientService(id: "pub", kind: .presencePublish)
        let engine = RulesEngine(appState: .background)
        #expect(engine.permits(.publishPresence, for: pub, trigger: .callStateChanged("c")))
        #expect(!engine.permits(.publishPresence, for: pub, trigger: .network(.restored)))
    }

    @Test func everyActionNamesItsRuleAndLevelRow() {
        for (name, _) in Fixtures.triggers {
            for state in AppState.allCases {
                var engine = RulesEngine(appState: state)
                for action in engine.decide(Fixtures.triggers[name]!, services: Fixtures.services, at: Fixtures.t0) {
                    #expect(action.source.hasPrefix("rule "))
                    #expect(action.source.contains("; level "))
                }
            }
        }
    }
}
