import Foundation
import NetworkLab
import Testing

/// Link, address and route faults, each asserted on what the kernel shows in the phone host while
/// the fault holds and after it is undone.
@Suite(.needsLab, .timeLimit(.minutes(2)))
struct LinkFaultTests {
    /// Starts `fault`, waits until `during` holds (≤ 10 s), then lets the fault finish.
    func whileInjecting(
        _ fixture: LabFixture, _ fault: Fault, until during: @Sendable () async throws -> Bool
    ) async throws -> (held: Bool, backend: FaultBackend) {
        async let backend = fixture.lab.inject(fault)
        let held = try await eventually(within: .seconds(10), during)
        return (held, try await backend)
    }

    @Test func carrierLossDropsTheCarrierButNotAdminUpAndComesBack() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let (held, backend) = try await whileInjecting(f, .carrierLoss(f.wifi, for: .seconds(1))) {
                let link = try await f.phoneIP("link show wifi")
                return link.contains("NO-CARRIER") && link.contains(",UP")
            }
            #expect(held && backend == .iproute2)
            #expect(try await f.phoneIP("link show wifi").contains("LOWER_UP"))
            #expect(try await f.route(to: LabAddress.service4) == "wifi")
        }
    }

    @Test(arguments: AddressChangeOrder.allCases)
    func anAddressChangeReplacesTheAddressAndTheSameSeedPicksTheSameOne(order: AddressChangeOrder) async throws {
        var picked: [String] = []
        for _ in 0..<2 {
            picked.append(
                try await withNetworkLab(seed: 1234) { lab in
                    let f = try await LabFixture(lab)
                    let old = await lab.addresses(of: f.wifi).ipv4
                    try await lab.inject(.addressChange(f.wifi, order))
                    let new = await lab.addresses(of: f.wifi)
                    let shown = try await f.phoneIP("address show wifi")
                    #expect(new.ipv4 != old && shown.contains(new.ipv4 + "/24") && !shown.contains(old + "/24"))
                    #expect(shown.contains(new.ipv6 + "/64"))
                    #expect(try await f.route(to: LabAddress.service4) == "wifi", "the default route survives")
                    return new.ipv4
                })
        }
        #expect(picked[0] == picked[1], "seed 1234 picked \(picked)")
    }

    @Test func renumberingMovesBothEndsToANewSubnetAndTheRouteFollows() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            try await lab.inject(.renumber(f.wifi))
            let now = await lab.addresses(of: f.wifi)
            #expect(!now.ipv4.hasPrefix("198.18.1."))
            #expect(try await f.phoneIP("route show default").contains("via \(now.gateway4) dev wifi"))
        }
    }

    @Test func defaultRouteLossAndInterfaceSwitchMoveThePrimaryToTheOtherLinkAndBack() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let lost = try await whileInjecting(f, .defaultRouteLoss(f.wifi, for: .seconds(1))) {
                try await f.route(to: LabAddress.service4) == "cell"
            }
            #expect(lost.held)
            #expect(try await f.route(to: LabAddress.service4) == "wifi")
            let switched = try await whileInjecting(f, .interfaceSwitch(from: f.wifi, to: f.cell, for: .seconds(1))) {
                try await f.route(to: LabAddress.service4) == "cell"
            }
            #expect(switched.held)
            #expect(try await f.route(to: LabAddress.service4) == "wifi")
        }
    }

    @Test func recreateRenameAndMoveEachLeaveTheLinkAsItWas() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let elsewhere = try await lab.addHost("elsewhere")
            let renamed = try await whileInjecting(f, .rename(f.wifi, to: "wlan9", for: .seconds(1))) {
                try await f.phoneIP("link show").contains("wlan9")
            }
            #expect(renamed.held)
            let moved = try await whileInjecting(f, .moveToHost(f.wifi, elsewhere, for: .seconds(1))) {
                try await lab.run(in: elsewhere, ["ip", "link", "show"]).contains("wifi")
            }
            #expect(moved.held)
            try await lab.inject(.linkRecreate(f.wifi, after: .milliseconds(200)))
            let address = await lab.addresses(of: f.wifi).ipv4
            #expect(try await f.phoneIP("address show wifi").contains(address + "/24"))
            #expect(try await f.route(to: LabAddress.service4) == "wifi")
        }
    }

    @Test func aFlapScheduleCountsTwoCarrierChangesPerFlap() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            func carrierChanges() async throws -> Int {
                // `ip netns exec` mounts the namespace's own sysfs.
                let text = try await lab.run(in: f.phone, ["cat", "/sys/class/net/wifi/carrier_changes"])
                return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            }
            let before = try await carrierChanges()
            try await lab.inject(.flap(f.wifi, FlapSchedule(count: 5, period: .milliseconds(100))))
            #expect(try await carrierChanges() - before == 10)
        }
    }

    @Test func outOfRangeBoundsAreRejectedBeforeAnythingChanges() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            await #expect(throws: NetworkLabError.self) {
                try await lab.inject(.flap(f.wifi, FlapSchedule(count: 0, period: .seconds(1))))
            }
            await #expect(throws: NetworkLabError.self) {
                try await lab.inject(.packetLoss(f.wifi, percent: 101, for: .zero))
            }
            await #expect(throws: NetworkLabError.self) { try await lab.inject(.adminDown(f.wifi, for: .seconds(601))) }
        }
    }
}
