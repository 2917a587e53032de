import Foundation
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import SIPPlugin

/// Issue 25, on real loopback sockets: a hostile peer's flood is answered at once and bounded,
/// big datagrams arrive whole, and a head with too many lines costs a stream nothing but a 400.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HostileInputTests {
    /// An agent subscribed through `peer` (its notifier): then `script` runs on the peer's thread
    /// with the SUBSCRIBE and the agent's address. The agent is closed at the end.
    static func subscribed<T: Sendable>(
        _ script: @escaping @Sendable (UDPTestPeer, SIPMessage, sockaddr_in) -> T
    ) async throws -> (T, SIPUserAgent) {
        let peer = try UDPTestPeer()
        let port = peer.port
        let agent = SIPSubscriptionPeerTests().makeAgent(port: port)
        let run = Task {
            await peer.run { peer -> T? in
                guard
                    let (subscribe, from) = SIPSubscriptionPeerTests.nextRequest(
                        peer, within: UDPTestPeer.arrivalGuard)
                else { return nil }
                peer.send(SIPSubscriptionPeerTests.accept(subscribe, tag: "srv", port: port), to: from)
                return script(peer, subscribe, from)
            }
        }
        try await agent.subscribe(
            SIPSubscriptionPeerTests.target, service: SIPSubscriptionPeerTests.service, path: loopbackPath())
        let result = try #require(await run.value, "the agent never subscribed")
        return (result, agent)
    }

    /// An INVITE with an SDP offer, from outside any dialog, as a forged caller sends it.
    static func invite(_ index: Int, port: Int) -> [UInt8] {
        var request = peerRequest(
            "INVITE", uri: "sip:peer@127.0.0.1", sentBy: "127.0.0.1:\(port)", branch: "z9hG4bKflood\(index)",
            callID: "flood-\(index)")
        request.headers.add("Contact", "<sip:forger@127.0.0.1:\(port)>")
        request.headers.add("Content-Type", "application/sdp")
        request.body = Array(
            "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n".utf8)
        return request.serialized()
    }

    @Test func fiftyForgedInvitesAreEachAnsweredAtOnceRungOr503WithRetryAfter() async throws {
        let (answers, agent) = try await Self.subscribed { peer, _, from -> [String: SIPMessage] in
            for index in 0..<50 { peer.send(Self.invite(index, port: peer.port), to: from) }
            // The last answer of each INVITE: 180 (rung) or 503 (refused), 100 Trying meanwhile.
            var last: [String: SIPMessage] = [:]
            while last.values.filter({ ($0.status ?? 0) > 100 }).count < 50,
                let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard)
            {
                guard let message = try? SIPParser.parse(datagram: bytes), message.cseq?.method == "INVITE",
                    let callID = message.headers["Call-ID"]
                else { continue }
                if (message.status ?? 0) > 100 || last[callID] == nil { last[callID] = message }
            }
            return last
        }
        await agent.close()
        let rung = answers.values.filter { $0.status == 180 }
        let refused = answers.values.filter { $0.status == 503 }
        #expect(rung.count + refused.count == 50, "every INVITE answered: \(answers.values.map(\.status))")
        // The door holds a burst and refills at its rate; the 50 sends take well under a second.
        let door = InboundAdmission.Settings()
        #expect(!refused.isEmpty && rung.count <= Int(door.strangerBurst + door.strangerRate))
        #expect(refused.allSatisfy { Int($0.headers["Retry-After"] ?? "") ?? 0 >= 1 })
    }

    /// RFC 3261 §18.1.1 lets a request over UDP be larger than the path MTU ("If a request is
    /// within 200 bytes of the path MTU, or if it is larger than 1300 bytes and the path MTU is
    /// unknown, the request MUST be sent using an RFC 2914 congestion controlled transport
    /// protocol, such as TCP" binds the sender, not the receiver): up to 64 KB arrives whole.
    @Test func aFourKilobyteNotifyOverUDPIsAnswered200() async throws {
        let (status, agent) = try await Self.subscribed { peer, subscribe, from -> Int? in
            let small = SIPSubscriptionPeerTests.notify(
                for: subscribe, tag: "srv", state: "active;expires=300", port: peer.port)
            var notify = try? SIPParser.parse(datagram: small)
            let padding = String(repeating: "<!-- padding to four kilobytes -->\n", count: 120)
            notify?.body = Array("<?xml version=\"1.0\"?>\n\(padding)<reginfo/>\n".utf8)
            guard let notify, notify.serialized().count > 4_096 else { return nil }
            peer.send(notify.serialized(), to: from)
            while let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                if let answer = try? SIPParser.parse(datagram: bytes), answer.cseq?.method == "NOTIFY" {
                    return answer.status
                }
            }
            return nil
        }
        await agent.close()
        #expect(status == 200)
    }

    /// A head of 300 header lines on a stream: one 400, then the next message on the same
    /// connection is delivered (the decoder skipped exactly that message).
    @Test func aHeadWithTooManyLinesOverTCPIsAnswered400AndTheConnectionStays() throws {
        let inbox = SharedDatagramFlowTests.Inbox()
        let callbacks = FlowCallbacks(
            log: ThrottledLog(logger: testLogger("hostile-tcp"), clock: ContinuousClock()),
            inbound: { message, _ in inbox.received.withLock { $0["tcp", default: []].append(message) } }, onPong: {})
        let channel = EmbeddedChannel()
        try addStreamHandlers(to: channel.pipeline.syncOperations, callbacks)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5060)).wait()
        var hostile = "INVITE sip:peer@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5060;branch=z9hG4bKmany\r\n"
        hostile += "From: <sip:x@127.0.0.1>;tag=x\r\nTo: <sip:peer@127.0.0.1>\r\nCall-ID: many\r\nCSeq: 1 INVITE\r\n"
        for index in 0..<300 { hostile += "X-Filler-\(index): \(index)\r\n" }
        hostile += "Content-Length: 5\r\n\r\nhello"
        let options =
            "OPTIONS sip:peer@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5060;branch=z9hG4bKnext\r\n"
            + "From: <sip:x@127.0.0.1>;tag=y\r\nTo: <sip:peer@127.0.0.1>\r\nCall-ID: next\r\nCSeq: 1 OPTIONS\r\n"
            + "Content-Length: 0\r\n\r\n"
        try channel.writeInbound(ByteBuffer(string: hostile + options))
        let written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        let answer = try SIPParser.parse(datagram: Array(written.readableBytesView))
        #expect(answer.status == 400 && answer.headers["Call-ID"] == "many")
        #expect(channel.isActive, "the connection stays")
        #expect(inbox.messages(of: "tcp").map(\.method) == ["OPTIONS"], "the next message arrives")
        _ = try? channel.finish()
    }

    /// A server that accepts TCP and never answers the ClientHello: the TLS flow fails (not a
    /// certificate failure: the action backs off and retries) instead of waiting for ever.
    @Test func aStalledTLSHandshakeFailsWithinItsOwnTimeout() async throws {
        let silent = try TCPTestPeer()  // listens; the kernel completes TCP, nobody reads
        let started = ContinuousClock.now
        await #expect(throws: TLSHandshakeTimedOut.self) {
            _ = try await SIPTransport.open(
                kind: .tls, localHost: "127.0.0.1",
                remote: try SocketAddress(ipAddress: "127.0.0.1", port: silent.port),
                serverName: "registrar.test",
                log: ThrottledLog(logger: testLogger("hostile-tls"), clock: ContinuousClock()),
                onLost: { _ in }, onPong: {}, inbound: { _, _ in })
        }
        // A hang guard, not a timing assertion: without the timeout the open never returns.
        #expect(ContinuousClock.now - started < .seconds(30), "well under an action's timeout")
    }
}
