import NetlinkMonitor
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct AddressRouteFaultTests {
    @Test(arguments: [
        (AddressFamily.ipv4, "198.18.1.3/24", "198.18.1.3"), (.ipv6, "2001:db8:1::3/64", "2001:db8:1::3"),
    ])
    func addressesComeAndGo(family: AddressFamily, cidr: String, text: String) async throws {
        try await MonitorHarness.online { ns, h in
            let mark = h.transitions.count
            try await ns.ip("addr add \(cidr) dev veth0" + (family == .ipv6 ? " nodad" : ""))
            let added = try await h.event("\(text) added") {
                if case .addressAdded(let a) = $0 { a.address == text } else { false }
            }
            #expect(added.ifindex == h.monitor.snapshot().link(named: "veth0")?.ifindex)
            let changed = try await h.transition(.changed(.address), since: mark)
            #expect(changed.path.addresses.contains { $0.address == text && $0.family == family })

            let removedMark = h.transitions.count
            try await ns.ip("addr del \(cidr) dev veth0")
            try await h.event("\(text) removed") {
                if case .addressRemoved(let a) = $0 { a.address == text } else { false }
            }
            let after = try await h.transition(.changed(.address), since: removedMark)
            #expect(!after.path.addresses.contains { $0.address == text })
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func theDefaultRouteGoesAndReturns() async throws {
        try await MonitorHarness.online { ns, h in
            try await ns.ip("route del default")
            try await h.transition(.lost(.noDefaultRoute))
            try await h.event("route removed") { if case .defaultRouteRemoved = $0 { true } else { false } }
            let mark = h.transitions.count
            try await ns.ip("route add default via 198.18.1.1 dev veth0 metric 50")
            let restored = try await h.restored(since: mark)
            #expect(restored.path.defaultRoutes.first?.metric == 50)
            #expect(restored.path.defaultRoutes.first?.gateway == "198.18.1.1")
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func aReplacedGatewayIsADefaultRouteChange() async throws {
        try await MonitorHarness.online { ns, h in
            try await ns.ip("route replace default via 198.18.1.254 dev veth0")
            let changed = try await h.transition(.changed(.defaultRoute))
            #expect(changed.path.defaultRoutes.map(\.gateway) == ["198.18.1.254"])
            #expect(h.monitor.snapshot().defaultRoutes.count == 1)
            try await h.expectCacheMatchesDump()
        }
    }

    /// A multipath default route (`RTA_MULTIPATH`, no `RTA_OIF`) is a default route through each
    /// of its next hops: the path is satisfied by it, and stays satisfied when one hop's link goes.
    @Test func anECMPDefaultRouteCountsThroughEachNextHop() async throws {
        try await MonitorHarness.online { ns, h in
            // A second link to the peer (198.18.2.2/24), without a default route of its own.
            _ = try await ns.lab.connect(ns.client, to: ns.peer, as: "veth2", defaultRoute: false)
            let veth2 = try await h.event("veth2 up") {
                if case .linkChanged(_, let link) = $0 {
                    link.name == "veth2" && link.carrier == .carrier
                } else {
                    false
                }
            }
            try await ns.ip("route replace default nexthop via 198.18.1.1 dev veth0 nexthop via 198.18.2.1 dev veth2")
            try await h.event("route via veth2") {
                if case .defaultRouteAdded(let route) = $0 { route.ifindex == veth2.ifindex } else { false }
            }
            let routes = h.monitor.snapshot().defaultRoutes
            #expect(Set(routes.map(\.gateway)) == ["198.18.1.1", "198.18.2.1"], "\(routes)")
            try await h.expectCacheMatchesDump()

            let mark = h.transitions.count
            try await ns.ip("link set veth0 down")
            try await h.event(since: 0, "veth0 down") {
                if case .linkChanged(_, let link) = $0 { link.name == "veth0" && !link.isAdminUp } else { false }
            }
            try await h.expectCacheMatchesDump()
            let path = h.monitor.currentPath()
            #expect(path.isSatisfied)
            #expect(path.primaryInterface?.name == "veth2")
            #expect(
                await h.transitions.first(since: mark, within: .milliseconds(300)) { $0.path.isSatisfied == false }
                    == nil)
        }
    }
}
