import Foundation
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The binding query against a scripted UDP registrar on loopback, on a ManualClock: which flow
/// pings ask for the bindings (RFC 3261 §10.2.3), and what a registrar that forgot them causes.
@Suite(.timeLimit(.minutes(3)))
struct BindingQueryPeerTests {
    /// What the scripted registrar saw: each request's method and whether it had a Contact.
    struct Seen: Hashable, Sendable {
        var method: String
        var hasContact: Bool
    }

    func makeAgent(port: Int, clock: ManualClock, recorder: LossRecorder) -> (SIPUserAgent, SIPAccount) {
        let account = SIPAccount(
            name: "amnesia", registrarHost: "127.0.0.1", registrarPort: port, transport: .udp, user: "amnesia",
            domain: "127.0.0.1", password: "secret", expires: 300, flowPing: .every(.seconds(30)))
        let agent = SIPUserAgent(account: account, logger: testLogger("binding"), clock: clock) {
            recorder.record($0)
        }
        return (agent, account)
    }

    /// Answers `count` requests 200 OK. A REGISTER's Contact is echoed and remembered; a query
    /// (REGISTER without Contact) is answered with the remembered bindings, none when `forgets`.
    static func registrar(_ peer: UDPTestPeer, requests count: Int, forgets: Bool) -> [Seen] {
        var seen: [Seen] = []
        var bound: [String] = []
        for _ in 0..<count {
            // A hang guard, not a window: the agents wait on a ManualClock, so a request that
            // came after the script gave up would wait for its answer forever.
            guard let (bytes, from) = peer.receive(within: 30),
                let request = try? SIPParser.parse(datagram: bytes)
            else { return seen }
            let contacts = request.headers.values("Contact")
            seen.append(Seen(method: request.method ?? "", hasContact: !contacts.isEmpty))
            var response = request.makeResponse(status: 200, reason: "OK", toTag: "registrar")
            if request.method == "REGISTER" {
                if !contacts.isEmpty { bound = contacts.map { extractURI($0) } }
                for contact in forgets && contacts.isEmpty ? [] : bound {
                    response.headers.add("Contact", "<\(contact)>;expires=300")
                }
            }
            peer.send(response.serialized(), to: from)
        }
        return seen
    }

    /// An agent registered at a scripted registrar that answers three requests in all.
    func registered(forgets: Bool) async throws -> (
        SIPUserAgent, SIPAccount, ManualClock, LossRecorder, Task<[Seen], Never>
    ) {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let recorder = LossRecorder()
        let (agent, account) = makeAgent(port: peer.port, clock: clock, recorder: recorder)
        let script = Task { await peer.run { Self.registrar($0, requests: 3, forgets: forgets) } }
        try await agent.register(path: loopbackPath())
        return (agent, account, clock, recorder, script)
    }

    @Test func aFlowPingAfterThreeQuartersOfTheIntervalAsksForTheBindingsAndAKeptBindingIsNoLoss() async throws {
        let (agent, _, clock, recorder, script) = try await registered(forgets: false)
        // Too soon after the 2xx: a plain OPTIONS keep-alive.
        clock.advance(by: .seconds(10))
        try await agent.sendFlowPing(path: loopbackPath())
        clock.advance(by: .seconds(14))
        try await agent.sendFlowPing(path: loopbackPath())
        let seen = await script.value
        #expect(
            seen == [
                Seen(method: "REGISTER", hasContact: true), Seen(method: "OPTIONS", hasContact: false),
                Seen(method: "REGISTER", hasContact: false),
            ], "\(seen)")
        // The query just confirmed the binding: the next ping is a keep-alive again.
        clock.advance(by: .seconds(10))
        let next = await agent.registration.bindingCheck.probe(at: clock.now, flowPingInterval: .seconds(30))
        #expect(next == .keepAlive)
        #expect(recorder.all.isEmpty)
        #expect(await agent.registrationStatus.contact != nil)
        await agent.close()
    }

    @Test func aRegistrarThatForgotTheBindingHasTheRegistrationReportedLostAndShownUnbound() async throws {
        let (agent, account, clock, recorder, script) = try await registered(forgets: true)
        clock.advance(by: .seconds(24))
        try await agent.sendFlowPing(path: loopbackPath())
        #expect(recorder.all == [[account.registrationService]])
        #expect(await agent.registrationStatus.contact == nil)
        // The runtime's answer to the loss: a REGISTER through the same flow binds it again.
        try await agent.register(path: loopbackPath())
        #expect(
            await script.value == [
                Seen(method: "REGISTER", hasContact: true), Seen(method: "REGISTER", hasContact: false),
                Seen(method: "REGISTER", hasContact: true),
            ])
        #expect(await agent.registrationStatus.contact != nil)
        #expect(recorder.all.count == 1)
        await agent.close()
    }
}
