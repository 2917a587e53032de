import NetworkLab
import Testing

/// The dead path: every packet dropped both ways where it arrives, while the link looks up to the
/// kernel (carrier, addresses, routes, neighbours); counted with real datagrams.
@Suite(.needsLab, .timeLimit(.minutes(2)))
struct DeadPathFaultTests {
    /// Sends `count` datagrams from `from` to `address` port 9 (bash's /dev/udp; a send that
    /// fails, as an output drop's EPERM would, fails the command), then how many `to` counted.
    func datagrams(_ count: Int, from: LabHost, to: LabHost, address: String, _ lab: NetworkLab) async throws -> Int {
        let counter = try await lab.countDatagrams(in: to, toPort: 9)
        let send = "for i in $(seq \(count)); do echo x > /dev/udp/\(address)/9 || exit 7; done"
        try await lab.run(in: from, ["bash", "-c", send], timeout: .seconds(30))
        let arrived = try await counter.packets()
        try await counter.remove()
        return arrived
    }

    /// What the phone's kernel shows of wifi: its link line, its default routes and the route to the server.
    func kernelView(_ f: LabFixture) async throws -> (link: String, routes: String, routeToServer: String) {
        let gateway = await f.lab.addresses(of: f.wifi).gateway4
        return (
            try await f.phoneIP("link show wifi"), try await f.phoneIP("route show default"),
            try await f.route(to: gateway)
        )
    }

    /// No table of the fault is left in either host.
    func expectNoTablesLeft(_ f: LabFixture) async throws {
        for host in [f.phone, f.server] {
            let tables = try await f.lab.run(in: host, ["nft", "list", "tables"])
            #expect(!tables.contains("netdev"), "no table left in \(host): \(tables)")
        }
    }

    /// Held for as long as the test measures (then cancelled, as `netres lab` cancels a step
    /// when its command ends): nothing crosses either way, no sender sees an error, the kernel
    /// still shows the link up with its routes; once cancelled nothing is left at either end.
    @Test func aDeadPathDropsBothWaysWhileTheLinkAndItsRoutesStayUpAndLeavesNothingWhenCancelled() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let wifi = await lab.addresses(of: f.wifi)
            let before = try await kernelView(f)
            let fault = Fault.deadPath(f.wifi, for: .seconds(300))
            let held = Task { try await lab.inject(fault) }
            let installed = await eventually(within: .seconds(30)) {
                await lab.events().contains { $0.what.contains("(netdev ingress) on wifi and wifip") }
            }
            try #require(installed, "the dead path's tables are in place")
            let outbound = try await datagrams(50, from: f.phone, to: f.server, address: wifi.gateway4, lab)
            let inbound = try await datagrams(50, from: f.server, to: f.phone, address: wifi.ipv4, lab)
            let during = try await kernelView(f)
            let stillHeld = await !lab.events().contains { $0.what.hasPrefix("\(fault): restoring") }
            held.cancel()
            _ = try? await held.value
            #expect(stillHeld, "everything above was measured while the fault held")
            #expect(outbound == 0, "\(outbound) of 50 datagrams crossed from the phone")
            #expect(inbound == 0, "\(inbound) of 50 datagrams crossed to the phone")
            #expect(during.link.contains("LOWER_UP") && !during.link.contains("NO-CARRIER"), "\(during.link)")
            #expect(during.routes == before.routes, "the default routes stayed: \(during.routes)")
            #expect(during.routeToServer == "wifi", "the kernel still routes by wifi")
            try await expectNoTablesLeft(f)
            #expect(try await datagrams(20, from: f.phone, to: f.server, address: wifi.gateway4, lab) == 20)
            #expect(try await datagrams(20, from: f.server, to: f.phone, address: wifi.ipv4, lab) == 20)
        }
    }

    /// Played to its end: the timeline says when it started giving the path back, the backend is
    /// nftables, and nothing is left at either end; traffic crosses again both ways.
    @Test func aDeadPathPlayedToItsEndIsRemovedAtBothEnds() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let fault = Fault.deadPath(f.wifi, for: .seconds(1))
            #expect(try await lab.inject(fault) == .nftables)
            let events = await lab.events().map(\.what)
            #expect(events.contains("\(fault): restoring") && events.contains("\(fault): end"), "\(events)")
            try await expectNoTablesLeft(f)
            let wifi = await lab.addresses(of: f.wifi)
            #expect(try await datagrams(20, from: f.phone, to: f.server, address: wifi.gateway4, lab) == 20)
            #expect(try await datagrams(20, from: f.server, to: f.phone, address: wifi.ipv4, lab) == 20)
        }
    }
}
