import NetlinkMonitor
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct LinkFaultTests {
    @Test func adminDownIsLostAtOnceAndUpRestores() async throws {
        try await MonitorHarness.online(holdDown: .seconds(30)) { ns, h in
            try await ns.ip("link set veth0 down")
            let lost = try await h.transition(.lost(.adminDown))
            #expect(!lost.path.isSatisfied)
            try await h.event("veth0 admin-down") {
                if case .linkChanged(_, let l) = $0 { !l.isAdminUp } else { false }
            }

            let mark = h.transitions.count
            try await ns.ip("link set veth0 up")
            try await ns.ip("route add default via 198.18.1.1 dev veth0")  // IPv4 flushed it on down
            let restored = try await h.restored(since: mark)
            #expect(restored.path.primaryInterface?.name == "veth0")
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func carrierLossFromThePeerIsNoCarrier() async throws {
        try await MonitorHarness.online(holdDown: .zero) { ns, h in
            try await ns.setPeer(up: false)
            try await h.transition(.lost(.noCarrier))
            let link = try #require(h.monitor.snapshot().link(named: "veth0"))
            #expect(link.isAdminUp)
            #expect(link.carrier == .noCarrier)

            let mark = h.transitions.count
            try await ns.setPeer(up: true)
            try await h.restored(since: mark)
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func aDeletedAndRecreatedLinkGetsANewIndex() async throws {
        try await MonitorHarness.online(holdDown: .seconds(30)) { ns, h in
            let old = try #require(h.monitor.snapshot().link(named: "veth0"))
            try await ns.ip("link del veth0")
            try await h.event("veth0 removed") { if case .linkRemoved(let l) = $0 { l.name == "veth0" } else { false } }
            // The kernel closes a link before unregistering it; when the reader sees the close in
            // an earlier batch the loss reads admin-down. Either way it is reported at once.
            let lost = await h.transitions.first { $0.kind == .lost(.linkRemoved) || $0.kind == .lost(.adminDown) }
            #expect(lost != nil, "lost at once despite a 30 s hold-down")

            let mark = h.transitions.count
            // The same pair again, by hand: the test watches the moment between removal and return.
            try await ns.batch([
                "link add veth0 type veth peer name veth0p netns \(ns.peer.namespace)",
                "addr add 198.18.1.2/24 dev veth0",
                "link set veth0 up", "route add default via 198.18.1.1 dev veth0",
            ])
            try await ns.peerBatch(["addr add 198.18.1.1/24 dev veth0p", "link set veth0p up"])
            let new = try #require(try await h.restored(since: mark).path.primaryInterface)
            #expect(new.name == "veth0")
            #expect(new.ifindex != old.ifindex)
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func aLinkMovedToAnotherNamespaceIsRemoved() async throws {
        try await MonitorHarness.online(holdDown: .seconds(30)) { ns, h in
            let elsewhere = try await ns.lab.addHost("elsewhere")
            try await ns.ip("link set veth0 netns \(elsewhere.namespace)")
            try await h.event("veth0 left") { if case .linkRemoved(let l) = $0 { l.name == "veth0" } else { false } }
            let lost = await h.transitions.first { $0.kind == .lost(.linkRemoved) || $0.kind == .lost(.adminDown) }
            #expect(lost != nil, "lost at once despite a 30 s hold-down")
            #expect(h.monitor.snapshot().link(named: "veth0") == nil)
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func aRenameKeepsTheIndex() async throws {
        try await MonitorHarness.online { ns, h in
            let old = try #require(h.monitor.snapshot().link(named: "veth0"))
            try await ns.batch(["link set veth0 down", "link set veth0 name uplink0", "link set uplink0 up"])
            let renamed = try await h.event("rename") {
                guard case .linkChanged(let from, let to) = $0 else { return false }
                return from.name == "veth0" && to.name == "uplink0"
            }
            #expect(renamed.ifindex == old.ifindex)
            #expect(h.monitor.snapshot().link(named: "uplink0")?.ifindex == old.ifindex)
            try await h.expectCacheMatchesDump()
        }
    }

    @Test func aFlapStormInsideTheHoldDownYieldsNoLoss() async throws {
        try await MonitorHarness.online(holdDown: .seconds(20)) { ns, h in
            let before = h.monitor.snapshot().link(named: "veth0")?.carrierChanges ?? 0
            // The first flap is awaited so the path is seen unsatisfied (the kernel's linkwatch
            // may otherwise fold a fast storm into nothing); the other 49 follow at full speed.
            try await ns.setPeer(up: false)
            try await h.event("veth0 lost carrier") {
                if case .linkChanged(_, let l) = $0 { l.name == "veth0" && l.carrier == .noCarrier } else { false }
            }
            #expect(!h.monitor.currentPath().isSatisfied)
            try await ns.peerBatch(
                ["link set veth0p up"] + (1..<50).flatMap { _ in ["link set veth0p down", "link set veth0p up"] })
            // A marker: `changed(address)` needs the carrier back, so it comes after the storm.
            try await ns.ip("addr add 198.18.1.77/24 dev veth0")
            try await h.transition(.changed(.address))
            let kinds = h.transitions.recorded.map(\.kind)
            #expect(!kinds.contains { if case .lost = $0 { true } else { false } }, "\(kinds)")
            let after = h.monitor.snapshot().link(named: "veth0")?.carrierChanges ?? 0
            #expect(after > before, "IFLA_CARRIER_CHANGES reveals the collapsed flaps")
        }
    }
}
