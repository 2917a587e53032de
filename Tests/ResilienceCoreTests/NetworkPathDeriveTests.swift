import ResilienceCore
import Testing

struct NetworkPathDeriveTests {
    @Test func aWorkingInterfaceSatisfiesThePath() {
        let path = NetworkPath.derive(from: Fixture.online(), filter: .all)
        #expect(path.isSatisfied)
        #expect(path.primaryInterface == InterfaceRef(ifindex: 2, name: "eth2"))
        #expect(path.addresses == [Fixture.v4(2)])
    }

    @Test func theReasonIsTheFirstFailingCheckOnTheBestCandidate() {
        var snapshot = Fixture.online()
        snapshot.defaultRoutes = []
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noDefaultRoute))
        snapshot.addresses = []
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noAddress))
        snapshot.links[2] = Fixture.link(2, carrier: false)
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noCarrier))
        snapshot.links[2] = Fixture.link(2, up: false)
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.adminDown))
        snapshot.links = [:]
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noInterface))
    }

    @Test func theCandidateThatGotFurthestNamesTheReason() {
        var snapshot = Fixture.merged(Fixture.online(2), Fixture.online(3, address: "198.18.1.2"))
        snapshot.links[2] = Fixture.link(2, up: false)
        snapshot.defaultRoutes = []
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noDefaultRoute))
    }

    @Test func theLowestMetricDefaultRouteNamesThePrimary() {
        let snapshot = Fixture.merged(
            Fixture.online(2, metric: 200), Fixture.online(3, address: "198.18.1.2", metric: 100))
        let path = NetworkPath.derive(from: snapshot, filter: .all)
        #expect(path.primaryInterface?.ifindex == 3)
        #expect(path.addresses.first?.ifindex == 3)
        #expect(path.defaultRoutes.map(\.metric) == [100, 200])
    }

    @Test func tentativeLinkLocalAndFilteredOutDoNotCount() {
        var snapshot = Fixture.online()
        snapshot.addresses = [
            InterfaceAddress(ifindex: 2, family: .ipv6, address: "2001:db8::2", prefixLength: 64, flags: 0x40),
            InterfaceAddress(ifindex: 2, family: .ipv4, address: "169.254.1.1", prefixLength: 16, scope: 253),
        ]
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noAddress))
        #expect(
            NetworkPath.derive(from: Fixture.online(), filter: InterfaceFilter(["wlan*"])).status
                == .unsatisfied(.noInterface))
    }

    @Test func aDefaultRouteOfAnotherFamilyDoesNotCount() {
        var snapshot = Fixture.online()
        snapshot.defaultRoutes = [DefaultRoute(family: .ipv6, ifindex: 2, gateway: "fe80::1")]
        #expect(NetworkPath.derive(from: snapshot, filter: .all).status == .unsatisfied(.noDefaultRoute))
    }
}
