import ResilienceCore
import ResilienceRules
import Testing

/// The engine owns the network path; availability is read from it.
struct RulesEnginePathTests {
    let t0 = Fixtures.t0
    let wifi = NetworkPath(
        status: .satisfied, primaryInterface: InterfaceRef(ifindex: 3, name: "wlan0"),
        addresses: [InterfaceAddress(ifindex: 3, family: .ipv4, address: "198.18.1.2", prefixLength: 24)])

    @Test func aNetworkTriggerTakesItsTransitionsPathAndAvailabilityFollowsIt() {
        var engine = RulesEngine(path: wifi)
        _ = engine.decide(
            .network(.lost(.noAddress)), services: Fixtures.services,
            path: NetworkPath(status: .unsatisfied(.noAddress)),
            at: t0)
        #expect(engine.path == NetworkPath(status: .unsatisfied(.noAddress)))
        #expect(!engine.networkAvailable)
        let restored = engine.decide(.network(.restored), services: Fixtures.services, path: wifi, at: t0)
        #expect(engine.path == wifi && engine.networkAvailable)
        #expect(restored.first?.kind == .register)
    }

    /// Without a path (a caller that only has triggers), the status follows the trigger and the
    /// rest of the last path stays.
    @Test(arguments: [
        (Trigger.network(.lost(.noCarrier)), NetworkPath.Status.unsatisfied(.noCarrier)),
        (.network(.changed(.address)), .satisfied),
        (.app(.enteredBackground), .satisfied),
    ])
    func withoutAPathOnlyTheStatusFollowsANetworkTrigger(trigger: Trigger, status: NetworkPath.Status) {
        var engine = RulesEngine(path: wifi)
        _ = engine.decide(trigger, services: Fixtures.services, at: t0)
        #expect(engine.path.status == status)
        #expect(engine.path.primaryInterface == wifi.primaryInterface && engine.path.addresses == wifi.addresses)
    }

    /// A path that contradicts its trigger (a satisfied path on `lost`) is not believed over it.
    @Test func theTriggerDecidesAvailabilityWhenThePathDisagrees() {
        var engine = RulesEngine(path: wifi)
        _ = engine.decide(.network(.lost(.linkRemoved)), services: Fixtures.services, path: wifi, at: t0)
        #expect(engine.path.status == .unsatisfied(.linkRemoved) && !engine.networkAvailable)
    }
}

/// By policy a suspended app runs nothing; the event that leaves `suspended` plans what a network
/// change decided meanwhile would have planned awake.
struct RulesEngineSuspensionTests {
    let t0 = Fixtures.t0

    @Test func anAddressChangeWhileSuspendedIsActedOnWhenTheAppResumes() {
        var engine = RulesEngine(appState: .suspended)
        #expect(engine.decide(.network(.changed(.address)), services: Fixtures.services, at: t0).isEmpty)
        #expect(engine.decide(.network(.lost(.noCarrier)), services: Fixtures.services, at: t0).isEmpty)
        #expect(engine.decide(.network(.restored), services: Fixtures.services, at: t0).isEmpty)
        #expect(engine.changeWhileSuspended == .changed(.address), "a loss and restore keep the address change")
        let resumed = engine.decide(.app(.resumed), services: Fixtures.services, at: t0)
        let kinds = Set(resumed.map(\.kind))
        #expect(kinds.isSuperset(of: [.register, .unregisterOldContact, .subscribe]), "\(resumed)")
        #expect(resumed.first?.kind == .register || resumed.first?.kind == .closeStaleTransports)
        // Background now: others' presence (level none) is not brought back.
        #expect(!resumed.contains { $0.service == "others" && $0.kind == .subscribe })
        #expect(engine.changeWhileSuspended == nil)
        #expect(
            engine.decide(.app(.enteredForeground), services: Fixtures.services, at: t0).allSatisfy {
                $0.trigger == .app(.enteredForeground)
            })
    }

    @Test func withoutAChangeWhileSuspendedResumingOnlyRefreshesWhatIsStale() {
        var engine = RulesEngine(appState: .suspended)
        #expect(engine.decide(.network(.lost(.noCarrier)), services: Fixtures.services, at: t0).isEmpty)
        #expect(engine.changeWhileSuspended == nil)
        let resumed = engine.decide(.app(.resumed), services: Fixtures.services, at: t0)
        #expect(resumed.allSatisfy { $0.trigger == .app(.resumed) })
    }
}
