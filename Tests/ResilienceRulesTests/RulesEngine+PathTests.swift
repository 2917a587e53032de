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
