import Foundation
import Logging
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Synchronization
import Testing

@testable import SIPPlugin

/// Lines anyone who reaches the proxy can provoke once per request (a forged INVITE's bad offer,
/// a forged call left ringing or never ACKed, a MESSAGE) are bounded like the wire's warnings
/// (``ThrottledLog``, see SIPLogFloodTests): twenty requests, each still answered and handed
/// on, log the first ``ThrottledLog/limit`` lines of their kind. A scripted registrar on
/// loopback sends them; the agent runs on a ManualClock, so call timers fire when told.
@Suite(.timeLimit(.minutes(3)))
struct ForgedRequestLogTests {
    /// More than the throttle's limit, fewer than the door's burst (`InboundAdmission`), so every
    /// request is admitted and answered.
    static let count = 20

    /// What the agent under test logged and how it hears of calls.
    struct Setup {
        let agent: SIPUserAgent
        let account: SIPAccount
        let clock: ManualClock
        let records: LogRecords
        let events = EventCounter()
    }

    /// Counts the agent's call events by phase, and keeps the ids of calls that rang.
    final class EventCounter: Sendable {
        private let seen = Mutex<[CallEvent]>([])
        func record(_ event: CallEvent) { seen.withLock { $0.append(event) } }
        func count(_ phase: CallPhase) -> Int { seen.withLock { $0.filter { $0.phase == phase }.count } }
        var ringing: [CallID] { seen.withLock { $0.filter { $0.phase == .alerting }.map(\.call) } }
    }

    /// An agent registered at `peer`; `script` then runs on the peer's thread with the agent's
    /// address, and its result is returned once it ends.
    static func registered<T: Sendable>(
        at peer: UDPTestPeer, _ script: @escaping @Sendable (UDPTestPeer, sockaddr_in) -> T
    ) async throws -> (Setup, T?) {
        let records = LogRecords()
        let logger = Logger(label: "forged") { _ in RecordingLogHandler(records) }
        let clock = ManualClock()
        let account = SIPAccount(
            name: "forged", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "forged", domain: "127.0.0.1",
            password: "secret", expires: 300, flowPing: .off)
        let agent = SIPUserAgent(account: account, logger: logger, clock: clock)
        let setup = Setup(agent: agent, account: account, clock: clock, records: records)
        let events = setup.events
        Task {
            for await event in agent.callEvents { events.record(event) }
        }
        let run = Task {
            await peer.run { peer -> T? in
                guard
                    let (register, from) = SIPSubscriptionPeerTests.nextRequest(
                        peer, within: UDPTestPeer.arrivalGuard)
                else { return nil }
                peer.send(register.makeResponse(status: 200, reason: "OK", toTag: "r").serialized(), to: from)
                return script(peer, from)
            }
        }
        try await agent.register(path: loopbackPath())
        return (setup, await run.value)
    }

    /// A forged INVITE (outside any dialog) with `offer` as its SDP body.
    static func invite(_ index: Int, port: Int, offer: String) -> [UInt8] {
        var request = peerRequest(
            "INVITE", uri: "sip:forged@127.0.0.1", sentBy: "127.0.0.1:\(port)", branch: "z9hG4bKforged\(index)",
            callID: "forged-\(index)")
        request.headers.add("Contact", "<sip:forger@127.0.0.1:\(port)>")
        request.headers.add("Content-Type", "application/sdp")
        request.body = Array(offer.utf8)
        return request.serialized()
    }

    static let goodOffer =
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n"

    /// The final status of each request the peer sent (by Call-ID), read until `count` came.
    static func finals(_ peer: UDPTestPeer, method: String) -> [Int] {
        var last: [String: Int] = [:]
        while last.count < count, let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard) {
            guard let answer = try? SIPParser.parse(datagram: bytes), answer.cseq?.method == method,
                let status = answer.status, status >= 200, let callID = answer.headers["Call-ID"]
            else { continue }
            last[callID] = status
        }
        return Array(last.values)
    }

    @Test func twentyForgedInvitesWithABadOfferAreEachAnswered488AndLogTenLines() async throws {
        let peer = try UDPTestPeer()
        let (setup, statuses) = try await Self.registered(at: peer) { peer, agent in
            for index in 0..<Self.count {
                peer.send(Self.invite(index, port: peer.port, offer: "not an offer"), to: agent)
            }
            return Self.finals(peer, method: "INVITE")
        }
        #expect(statuses == Array(repeating: 488, count: Self.count), "\(String(describing: statuses))")
        #expect(setup.records.named("sip.call-bad-offer").count == ThrottledLog.limit)
        await setup.agent.close()
    }

    @Test func twentyMessagesAreAllHandedOnAndLogTenLines() async throws {
        let peer = try UDPTestPeer()
        let (setup, statuses) = try await Self.registered(at: peer) { peer, agent in
            for index in 0..<Self.count {
                var message = peerRequest(
                    "MESSAGE", uri: "sip:forged@127.0.0.1", sentBy: "127.0.0.1:\(peer.port)",
                    branch: "z9hG4bKmessage\(index)", callID: "message-\(index)")
                message.headers.add("Content-Type", "text/plain")
                message.body = Array("hello \(index)".utf8)
                peer.send(message.serialized(), to: agent)
            }
            return Self.finals(peer, method: "MESSAGE")
        }
        #expect(statuses == Array(repeating: 200, count: Self.count), "\(String(describing: statuses))")
        var delivered = 0
        for await _ in setup.agent.messages {
            delivered += 1
            if delivered == Self.count { break }
        }
        #expect(delivered == Self.count)
        #expect(setup.records.named("sip.message-received").count == ThrottledLog.limit)
        await setup.agent.close()
    }

    /// Forged calls rung and left to ring out, or (`answered`) answered and never ACKed: each
    /// ends on its timer (480 after the ringing timeout; RFC 3261 §13.3.1.4's 64*T1 without an
    /// ACK), and the timer's line is logged for the first ten.
    @Test(arguments: [false, true])
    func twentyForgedCallsEndingOnTheirTimersLogTenLines(answered: Bool) async throws {
        let peer = try UDPTestPeer()
        let (setup, _) = try await Self.registered(at: peer) { peer, agent in
            for index in 0..<Self.count {
                peer.send(Self.invite(index, port: peer.port, offer: Self.goodOffer), to: agent)
            }
        }
        let events = setup.events
        let rang = await eventually(within: .seconds(30)) { events.count(.alerting) == Self.count }
        try #require(rang, "\(events.count(.alerting)) rang")
        if answered {
            for id in events.ringing { try await setup.agent.answer(id, path: loopbackPath()) }
        }
        setup.clock.advance(by: answered ? .seconds(40) : setup.account.ringingTimeout + .seconds(1))
        let ended = await eventually(within: .seconds(30)) { events.count(.ended) == Self.count }
        #expect(ended, "\(events.count(.ended)) ended")
        let kind = answered ? "sip.call-ack-timeout" : "sip.call-ringing-timeout"
        #expect(setup.records.named(kind).count == ThrottledLog.limit)
        await setup.agent.close()
    }
}
