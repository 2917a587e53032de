import NetlinkMonitor
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct OverrunTests {
    @Test func aForcedOverrunEndsResyncedWithTheCacheEqualToADump() async throws {
        try await MonitorHarness.online(receiveBufferSize: 1) { ns, h in
            await h.monitor._pauseReading()
            let names = (0..<200).map { "nrifb\($0)" }
            try await ns.batch(names.map { "link add \($0) type ifb" })
            try await ns.batch(names.prefix(100).map { "link del \($0)" })
            try await ns.ip("addr add 198.18.1.9/24 dev veth0")
            h.monitor._resumeReading()

            let resynced = try await h.event("resynced") { $0 == .resynced }
            let synthesized = h.events.recorded.filter { $0.synthesized && $0.seq < resynced.seq }
            #expect(
                synthesized.contains { if case .linkAdded(let l) = $0.kind { l.name == "nrifb199" } else { false } })
            #expect(!h.monitor.snapshot().links.values.contains { $0.name == "nrifb0" })
            try await h.expectCacheMatchesDump()
            // The stream goes on after an overrun.
            let mark = h.events.count
            try await ns.ip("link set nrifb150 up")
            try await h.event(since: mark, "event after resync") {
                if case .linkChanged(_, let l) = $0 { l.name == "nrifb150" && l.isAdminUp } else { false }
            }
        }
    }
}
