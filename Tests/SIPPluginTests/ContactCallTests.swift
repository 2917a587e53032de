import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// A far end that reaches the account straight at its Contact, with no proxy on the way (sipp as
/// the caller, a real Kamailio on loopback as the registrar the account registered with): the
/// call rings, is answered, and the far end's BYE, sent to the Contact, ends it.
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled && LabRegistrar.isInstalled, "sipp or Kamailio missing: SKIPPED"),
    .timeLimit(.minutes(1))
)
struct ContactCallTests {
    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func aByeSentStraightToTheContactEndsTheCall(transport: SIPTransportKind) async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("direct")
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, transport: transport, user: user,
                domain: "127.0.0.1", password: "secret-\(user)", expires: 300)
            let plugin = SIPPlugin(accounts: [account], logger: testLogger(user))
            let agent = try #require(plugin.agent(for: user))
            let recorder = SIPCallSIPpTests.Recorder(agent)
            try await plugin.perform(action(.register, account.registrationService), context: context())
            let contact = try #require(await agent.registrationStatus.contact)
            let (host, port) = try #require(ContactProbe.hostPort(of: contact))
            // sipp's `t1`: one TCP connection of its own to the Contact's listener.
            let mode = transport == .tcp ? ["-t", "t1"] : []
            let sipp = try await SIPpHarness.start(
                scenario: "uac-to-contact", arguments: mode + ["-s", user, "\(host):\(port)"])
            defer { sipp.stop() }
            let rung = await recorder.events(until: { $0.phase == .incoming }, within: 15).first {
                $0.phase == .incoming
            }
            let call = try #require(rung?.call, "the INVITE sent to the Contact rang: \(sipp.messages.suffix(1500))")
            try await agent.answer(call, path: loopbackPath())
            let events = await recorder.events(until: { $0.phase == .ended }, within: 15)
            #expect(events.map(\.phase) == [.incoming, .active, .ended])
            #expect(events.last?.reason == "BYE")
            #expect(await sipp.exitStatus(within: 15) == 0, "sipp got 200 to its BYE: \(sipp.errors.suffix(800))")
            #expect(await agent.activeCalls.isEmpty)
            // The call never crossed the registrar.
            let crossed = kamailio.requests().map(\.kind)
            #expect(!crossed.contains { ["INVITE", "ACK", "BYE"].contains($0) }, "\(crossed)")
            await agent.close()
        }
    }
}
