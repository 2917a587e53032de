import NetworkLab
import Testing

/// Loss, partitions and rate limits, measured with real datagrams counted in the server host.
@Suite(.needsLab, .timeLimit(.minutes(2)))
struct TrafficFaultTests {
    /// Sends 200 datagrams over wifi while `fault` holds; how many arrived, and the backend.
    func arrivals(during fault: Fault, _ f: LabFixture) async throws -> (Int, FaultBackend) {
        async let backend = f.lab.inject(fault)
        _ = await eventually(within: .seconds(10)) { await f.lab.events().contains { $0.what.hasPrefix("nft table") } }
        let arrived = try await f.datagramsArriving(over: f.wifi, count: 200)
        return (arrived, try await backend)
    }

    @Test func seededPacketLossDropsItsShareOfDatagramsWithNftables() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let (arrived, backend) = try await arrivals(during: .packetLoss(f.wifi, percent: 30, for: .seconds(8)), f)
            #expect(backend == .nftables)
            // 30 of every 100 consecutive packets leaving wifi are dropped; ARP and ND share the counter.
            #expect((125...155).contains(arrived), "\(arrived) of 200 arrived")
            #expect(try await f.datagramsArriving(over: f.wifi, count: 50) == 50, "the rules are gone afterwards")
        }
    }

    @Test(arguments: [(PartitionDirection.outbound, 0), (.both, 0), (.inbound, 200)])
    func aPartitionDropsItsDirectionOnly(direction: PartitionDirection, expected: Int) async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let (arrived, _) = try await arrivals(during: .partition(f.wifi, direction, for: .seconds(6)), f)
            #expect(arrived == expected)
        }
    }

    @Test func aRateLimitDropsWhatTheBucketCannotPassAndIsRemovedAfterwards() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            async let backend = lab.inject(.rateLimit(f.wifi, bitsPerSecond: 64_000, for: .seconds(6)))
            let shown = await eventually(within: .seconds(5)) {
                (try? await lab.run(in: f.phone, ["tc", "qdisc", "show", "dev", "wifi"]))?.contains("tbf") == true
            }
            // 200 KB offered at once; 64 kbit/s with a 4 KB bucket and 400 ms of queue pass a few dozen.
            let limited = try await f.datagramsArriving(over: f.wifi, count: 200, payload: 1000, settle: .seconds(1))
            let ran = try await backend
            #expect(shown && ran == .tbf)
            #expect(limited < 100, "\(limited) of 200 datagrams of 1000 bytes passed 64 kbit/s")
            #expect(!(try await lab.run(in: f.phone, ["tc", "qdisc", "show", "dev", "wifi"])).contains("tbf"))
            #expect(try await f.datagramsArriving(over: f.wifi, count: 200, payload: 1000) == 200, "unlimited again")
        }
    }
}
