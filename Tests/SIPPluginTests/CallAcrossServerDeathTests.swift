import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Calls across a server's death, against real servers on loopback: a primary and a backup
/// Kamailio found through SRV records (an in-memory zone, as `RegistrarFailoverKamailioTests`),
/// and sipp as the far end calling the account at its Contact with a Record-Route that names the
/// primary (its address, or a name that resolves to both servers). The primary is killed after
/// the answer and the account registers again (moving to the backup).
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled && LabRegistrar.isInstalled, "sipp or Kamailio missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct CallAcrossServerDeathTests {
    /// An answered call whose route set is `proxy`, the primary killed and the account moved to the
    /// backup; `body` gets the agent, the call, its event recorder and sipp.
    static func callAcrossDeath(
        proxy: (LabRegistrar) -> String,
        _ body: (SIPUserAgent, CallID, SIPCallSIPpTests.Recorder, SIPpHarness, LabRegistrar) async throws -> Void
    ) async throws {
        try await withLoopbackRegistrar { primary in
            try await withLoopbackRegistrar { backup in
                let user = uniqueUser("rrdeath")
                let zone = RegistrarFailoverKamailioTests.zone(primary: primary.port, backup: backup.port)
                let agent = RegistrarFailoverKamailioTests.agent(user, transport: .udp, zone: zone)
                let recorder = SIPCallSIPpTests.Recorder(agent)
                try await agent.register(path: loopbackPath())
                let contact = try #require(await agent.registrationStatus.contact)
                let (host, port) = try #require(ContactProbe.hostPort(of: contact))
                let sipp = try await SIPpHarness.start(
                    scenario: "uac-record-routed-proxy-dies",
                    arguments: ["-key", "proxy", proxy(primary), "-s", user, "\(host):\(port)"])
                defer { sipp.stop() }
                let rung = await recorder.events(until: { $0.phase == .alerting }, within: 15)
                let call = try #require(rung.first { $0.phase == .alerting }?.call, "\(sipp.errors.suffix(800))")
                try await agent.answer(call, path: loopbackPath())
                await primary.crash()
                try await agent.register(path: loopbackPath())
                #expect(try await backup.bindings().contains { $0.contact.contains(user) }, "not moved to the backup")
                try await body(agent, call, recorder, sipp, primary)
                await agent.close()
            }
        }
    }

    @Test func aCallRecordRoutedThroughTheKilledProxysAddressEndsWithAClearReasonAndOneByeToTheFarEnd()
        async throws
    {
        try await Self.callAcrossDeath(proxy: { "127.0.0.1:\($0.port)" }) { agent, call, recorder, sipp, primary in
            let events = await recorder.events(until: { $0.phase == .ended }, within: 10)
            let ended = try #require(events.first { $0.phase == .ended && $0.call == call }, "\(events)")
            #expect(ended.trigger == "server")
            #expect(ended.reason == "record-routing proxy 127.0.0.1:\(primary.port) is gone")
            #expect(await agent.activeCalls[call] == nil)
            // RFC 3261 §12.2.1.1 with the dead Route left out: "If the route set is empty, the UAC
            // MUST place the remote target URI into the Request-URI" — the BYE reaches sipp.
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp got no BYE: \(sipp.errors.suffix(800))")
        }
    }

    @Test func aCallRecordRoutedThroughANameThatStillResolvesToALivingServerIsKept() async throws {
        try await Self.callAcrossDeath(proxy: { _ in "lab.test" }) { agent, call, recorder, _, _ in
            // The move is looked at beside the registration: give it the time a lookup takes.
            try await Task.sleep(for: .milliseconds(500))
            #expect(!recorder.events.contains { $0.phase == .ended }, "\(recorder.events)")
            #expect(await agent.activeCalls[call] != nil, "the call was ended")
        }
    }
}
