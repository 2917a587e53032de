import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// The requests the account itself sends in a dialog whose route set is empty (no proxy
/// record-routed it) go to the remote target, not to the registrar: sipp calls the account
/// straight at its Contact with no Record-Route, the account answers, holds the call and hangs
/// up; a real Kamailio on loopback is the registrar the account registered with.
///
/// RFC 3261 §12.2.1.1: "If the route set is empty, the UAC MUST place the remote target URI into
/// the Request-URI. The UAC MUST NOT add a Route header field to the request." §8.1.2: with no
/// Route the request goes to the Request-URI's host.
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled && LabRegistrar.isInstalled, "sipp or Kamailio missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct DialogTargetTests {
    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func reinviteAckAndByeOfADialogWithoutRouteSetGoToTheRemoteTarget(transport: SIPTransportKind) async throws {
        try await withLoopbackRegistrar { kamailio in
            let f = try await ContactCallFixture("target", at: kamailio, transport: transport)
            let (agent, recorder) = (f.agent, f.recorder)
            let sipp = try await SIPpHarness.start(
                scenario: "uac-to-contact-callee-hangs-up", arguments: f.sippArguments())
            defer { sipp.stop() }
            let call = try #require(
                await f.rung(), "the INVITE sent to the Contact rang: \(sipp.messages.suffix(1500))")
            try await agent.answer(call, path: loopbackPath())
            // The re-INVITE's 200 comes from sipp's own address: it must reach the transaction.
            try await agent.hold(call, path: loopbackPath())
            try await agent.hangUp(call, path: loopbackPath())
            #expect(
                await sipp.exitStatus(within: 30) == 0,
                "sipp got the re-INVITE, its ACK and the BYE: \(sipp.errors.suffix(800)) \(sipp.messages.suffix(1500))")
            let events = await recorder.events(until: { $0.phase == .ended }, within: 15)
            #expect(events.map(\.phase) == [.alerting, .active, .held, .ended])
            // Not one request of the dialog crossed the registrar.
            let crossed = kamailio.requests().map(\.kind)
            #expect(!crossed.contains { ["INVITE", "ACK", "BYE"].contains($0) }, "\(crossed)")
            await agent.close()
        }
    }
}

/// The remote target URI a request with an empty route set goes to (RFC 3261 §19.1.1: "sip:"
/// user "@" host [":" port] uri-parameters; "the default port value is transport and scheme
/// dependent. For UDP, TCP, and SCTP, the default value is 5060. For TLS over TCP it is 5061.").
struct RemoteTargetTests {
    @Test func hostPortAndTransportAreReadFromTheURI() throws {
        let target = try #require(RemoteTarget(uri: "sip:bob@198.18.0.7:5062;transport=TCP;ob"))
        #expect(target == RemoteTarget(host: "198.18.0.7", port: 5062, transport: "tcp", isSecure: false))
        #expect(target.transport(from: .udp) == .tcp)
    }

    @Test func anIPv6LiteralLosesItsBracketsAndTheDefaultPortsFollowTheScheme() throws {
        let plain = try #require(RemoteTarget(uri: "sip:[2001:db8::7]"))
        #expect(plain.host == "2001:db8::7" && plain.port == 5060 && plain.transport(from: .udp) == .udp)
        let secure = try #require(RemoteTarget(uri: "sips:alice@phone.example"))
        #expect(secure.host == "phone.example" && secure.port == 5061 && secure.transport(from: .udp) == .tls)
    }

    @Test func theUserPartMayHoldAnAtSignBeforeTheHost() throws {
        let target = try #require(RemoteTarget(uri: "sip:a%40b@198.18.0.9:5070?Subject=x@y"))
        #expect(target.host == "198.18.0.9" && target.port == 5070)
    }

    @Test func hostileTargetsAreRefusedOrClamped() {
        #expect(RemoteTarget(uri: "tel:+15551234") == nil)
        #expect(RemoteTarget(uri: "sip:bob@") == nil)
        #expect(RemoteTarget(uri: "sip:bob@[2001:db8::1") == nil)
        #expect(RemoteTarget(uri: "sip:bob@host name") == nil)
        #expect(RemoteTarget(uri: "sip:" + String(repeating: "a", count: 300)) == nil)
        #expect(RemoteTarget(uri: "sip:bob@198.18.0.1:99999")?.port == 5060)
        #expect(RemoteTarget(uri: "sip:bob@198.18.0.1:0")?.port == 5060)
        #expect(RemoteTarget(uri: "sip:bob@198.18.0.1;transport=carrier-pigeon")?.transport(from: .udp) == .udp)
    }
}
