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
    .timeLimit(.minutes(3))
)
struct ContactCallTests {
    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func aByeSentStraightToTheContactEndsTheCall(transport: SIPTransportKind) async throws {
        try await withLoopbackRegistrar { kamailio in
            let f = try await ContactCallFixture("direct", at: kamailio, transport: transport)
            let (agent, recorder) = (f.agent, f.recorder)
            let sipp = try await SIPpHarness.start(
                scenario: "uac-to-contact", arguments: f.sippArguments())
            defer { sipp.stop() }
            let call = try #require(
                await f.rung(), "the INVITE sent to the Contact rang: \(sipp.messages.suffix(1500))")
            try await agent.answer(call, path: loopbackPath())
            let events = await recorder.events(until: { $0.phase == .ended }, within: 15)
            #expect(events.map(\.phase) == [.alerting, .active, .ended])
            #expect(events.last?.reason == "BYE")
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp got 200 to its BYE: \(sipp.errors.suffix(800))")
            #expect(await agent.activeCalls.isEmpty)
            // The call never crossed the registrar.
            let crossed = kamailio.requests().map(\.kind)
            #expect(!crossed.contains { ["INVITE", "ACK", "BYE"].contains($0) }, "\(crossed)")
            await agent.close()
        }
    }
}
