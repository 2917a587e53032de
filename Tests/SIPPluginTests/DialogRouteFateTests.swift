import Logging
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Calls across a server's death, as values: which dialogs a dead record-routing proxy ends,
/// which it leaves alone, and which a name in Record-Route keeps (RFC 3261 §12.2.1.1, RFC 3263).
struct DialogRouteFateTests {
    static let dead = SIPTarget(name: "primary.lab.test", address: "198.19.255.1", port: 5060, transport: .udp)
    static let living = SIPTarget(name: "backup.lab.test", address: "198.19.255.2", port: 5060, transport: .udp)

    @Test func aDialogWithoutRouteSetIsNotTouchedByTheServersDeath() {
        // §12.2.1.1: "If the route set is empty, the UAC MUST place the remote target URI into the
        // Request-URI" — requests go to the far end's Contact, not through the dead server.
        #expect(DialogRouteFate.decide(routeSet: [], dead: Self.dead, resolved: []) == .unaffected)
    }

    @Test func aDialogRecordRoutedThroughTheDeadServersAddressEndsWithAReasonThatSaysSo() {
        let fate = DialogRouteFate.decide(
            routeSet: ["<sip:198.19.255.1;lr;ftag=abc>"], dead: Self.dead, resolved: [Self.living])
        #expect(fate == .ended(reason: "record-routing proxy 198.19.255.1:5060 is gone"))
        let withPort = DialogRouteFate.decide(routeSet: ["<sip:198.19.255.1:5060;lr>"], dead: Self.dead, resolved: [])
        #expect(withPort == .ended(reason: "record-routing proxy 198.19.255.1:5060 is gone"))
    }

    @Test func aDialogRecordRoutedThroughAnotherServerIsLeftAlone() {
        for route in ["<sip:198.19.255.2;lr>", "<sip:198.19.255.1:5070;lr>", "<sip:[2001:db8::1];lr>"] {
            #expect(DialogRouteFate.decide(routeSet: [route], dead: Self.dead, resolved: []) == .unaffected, "\(route)")
        }
    }

    @Test func aNameInRecordRouteThatStillResolvesToALivingServerKeepsTheCall() {
        let routeSet = ["<sip:proxy.lab.test;lr>", "<sip:198.19.255.9;lr>"]
        #expect(DialogRouteFate.needsResolution(of: routeSet)?.host == "proxy.lab.test")
        #expect(!DialogRouteFate.firstHopHasPort(routeSet), "no port: NAPTR and SRV decide (RFC 3263 §4.2)")
        let fate = DialogRouteFate.decide(routeSet: routeSet, dead: Self.dead, resolved: [Self.dead, Self.living])
        #expect(fate == .kept(via: Self.living))
    }

    @Test func aNameThatResolvesOnlyToTheDeadServerOrToNothingEndsTheCall() {
        let routeSet = ["<sip:proxy.lab.test:5060;lr>"]
        #expect(DialogRouteFate.firstHopHasPort(routeSet))
        let reason = "record-routing proxy proxy.lab.test resolves to no living server"
        #expect(
            DialogRouteFate.decide(routeSet: routeSet, dead: Self.dead, resolved: [Self.dead]) == .ended(reason: reason)
        )
        #expect(DialogRouteFate.decide(routeSet: routeSet, dead: Self.dead, resolved: []) == .ended(reason: reason))
    }

    @Test func aHostileFirstRouteChangesNothingAndNeedsNoLookup() {
        let hostile = [
            "<tel:+15550100;lr>", "<sip:;lr>", "<sip:a b.example;lr>",
            "<sip:" + String(repeating: "a", count: 300) + ";lr>",
        ]
        for route in hostile {
            #expect(DialogRouteFate.needsResolution(of: [route]) == nil, "\(route.prefix(40))")
            #expect(DialogRouteFate.decide(routeSet: [route], dead: Self.dead, resolved: []) == .unaffected)
        }
        #expect(DialogRouteFate.needsResolution(of: ["<sip:198.19.255.1;lr>"]) == nil, "an IP literal is not looked up")
    }

    /// RFC 3263 §4.1/§4.2 for the proxy's name, through the registrar's resolver: SRV order with
    /// no port in the Route, A/AAAA only with one.
    @Test func theRoutesNameIsResolvedLikeARegistrarsInSRVOrder() async throws {
        let zone = RegistrarFailoverKamailioTests.zone(primary: 5060, backup: 5070)
        let directory = RegistrarDirectory(logger: Logger(label: "test"), check: .allowingLoopback, lookup: zone.lookup)
        let clock = ManualClock()
        let hop = try #require(DialogRouteFate.needsResolution(of: ["<sip:lab.test;lr>"]))
        let targets = try await directory.targets(ofProxy: hop, explicitPort: false, transport: .udp, clock: clock)
        #expect(targets.map(\.name) == ["primary.lab.test", "backup.lab.test"])
        #expect(targets.map(\.port) == [5060, 5070])
        let named = try #require(DialogRouteFate.needsResolution(of: ["<sip:backup.lab.test:5070;lr>"]))
        let direct = try await directory.targets(ofProxy: named, explicitPort: true, transport: .udp, clock: clock)
        #expect(direct.map(\.port) == [5070])
    }
}
