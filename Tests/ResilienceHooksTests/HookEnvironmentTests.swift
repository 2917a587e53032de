import ResilienceCore
import ResilienceHooks
import Testing

@Suite struct HookEnvironmentTests {
    let clock = WallClock()
    let eth0 = InterfaceRef(ifindex: 2, name: "eth0")
    let wlan0 = InterfaceRef(ifindex: 3, name: "wlan0")

    func path(_ interface: InterfaceRef?, _ addresses: [String] = [], status: NetworkPath.Status = .satisfied)
        -> NetworkPath
    {
        NetworkPath(
            status: status, primaryInterface: interface,
            addresses: addresses.map { text in
                let parts = text.split(separator: "/")
                return InterfaceAddress(
                    ifindex: interface?.ifindex ?? 0, family: text.contains(":") ? .ipv6 : .ipv4,
                    address: String(parts[0]), prefixLength: UInt8(parts[1])!)
            })
    }

    @Test func initialSatisfiedNamesInterfaceAddressesAndStatus() {
        let up = path(eth0, ["198.18.0.2/24", "fd00::2/64"])
        let env = HookEnvironment.variables(of: PathTransition(kind: .initial, path: up, at: .now), clock: clock)
        #expect(env["NETRES_EVENT"] == "initial")
        #expect(env["NETRES_STATUS"] == "satisfied")
        #expect(env["NETRES_REASON"] == "")
        #expect(env["NETRES_CHANGE"] == "")
        #expect(env["NETRES_INTERFACE"] == "eth0")
        #expect(env["NETRES_IFINDEX"] == "2")
        #expect(env["NETRES_ADDRESSES"] == "198.18.0.2/24 fd00::2/64")
        #expect(env["NETRES_DOWNTIME_MS"] == "")
    }

    @Test func initialUnsatisfiedCarriesTheReason() {
        let down = path(nil, status: .unsatisfied(.noInterface))
        let env = HookEnvironment.variables(of: PathTransition(kind: .initial, path: down, at: .now), clock: clock)
        #expect(env["NETRES_STATUS"] == "unsatisfied")
        #expect(env["NETRES_REASON"] == "no-interface")
        #expect(env["NETRES_INTERFACE"] == "")
        #expect(env["NETRES_IFINDEX"] == "")
    }

    @Test func lostNamesTheInterfaceThatWasLost() {
        let transition = PathTransition(
            kind: .lost(.noCarrier), path: path(nil, status: .unsatisfied(.noCarrier)),
            previous: path(eth0, ["198.18.0.2/24"]), at: .now)
        let env = HookEnvironment.variables(of: transition, clock: clock)
        #expect(env["NETRES_EVENT"] == "lost")
        #expect(env["NETRES_REASON"] == "no-carrier")
        #expect(env["NETRES_STATUS"] == "unsatisfied")
        #expect(env["NETRES_INTERFACE"] == "eth0")
        #expect(env["NETRES_ADDRESSES"] == "")
    }

    @Test func restoredCarriesDowntimeInMilliseconds() {
        let transition = PathTransition(
            kind: .restored(downtime: .milliseconds(1500)), path: path(eth0, ["198.18.0.2/24"]), at: .now)
        let env = HookEnvironment.variables(of: transition, clock: clock)
        #expect(env["NETRES_EVENT"] == "restored")
        #expect(env["NETRES_DOWNTIME_MS"] == "1500")
        #expect(env["NETRES_STATUS"] == "satisfied")
    }

    @Test func changedCarriesTheChangeAndTheNewInterface() {
        let transition = PathTransition(
            kind: .changed(.interfaceSwitched), path: path(wlan0, ["198.19.0.2/24"]),
            previous: path(eth0, ["198.18.0.2/24"]), at: .now)
        let env = HookEnvironment.variables(of: transition, clock: clock)
        #expect(env["NETRES_EVENT"] == "changed")
        #expect(env["NETRES_CHANGE"] == "interface-switched")
        #expect(env["NETRES_REASON"] == "")
        #expect(env["NETRES_INTERFACE"] == "wlan0")
        #expect(env["NETRES_IFINDEX"] == "3")
    }

    @Test func timeIsTheTransitionsRFC3339Timestamp() {
        let at = ContinuousClock.now
        let env = HookEnvironment.variables(of: PathTransition(kind: .initial, path: path(eth0), at: at), clock: clock)
        #expect(env["NETRES_TIME"] == clock.rfc3339(at))
        #expect(env["NETRES_TIME"]?.hasSuffix("Z") == true)
    }
}
