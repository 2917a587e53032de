import Foundation
import NIOCore
import ResilienceCore
import Synchronization
import Testing

@testable import SIPPlugin

/// Several accounts on one UDP socket (`DatagramFlowHub`): each gets its own responses and
/// requests, and what belongs to nobody is dropped and counted.
@Suite(.timeLimit(.minutes(3)))
struct SharedDatagramFlowTests {
    /// What each flow's inbound handler got, by user.
    final class Inbox: Sendable {
        let received = Mutex<[String: [SIPMessage]]>([:])
        let lost = Mutex<[String]>([])

        func messages(of user: String) -> [SIPMessage] { received.withLock { $0[user] ?? [] } }

        /// Waits (bounded, a hang guard) until `user` has `count` messages.
        func wait(for user: String, count: Int) async -> [SIPMessage] {
            for _ in 0..<200 where messages(of: user).count < count { try? await Task.sleep(for: .milliseconds(25)) }
            return messages(of: user)
        }
    }

    let hub = DatagramFlowHub(log: ThrottledLog(logger: testLogger("shared-flow"), clock: ContinuousClock()))
    let inbox = Inbox()

    func flow(_ user: String, to peer: UDPTestPeer) async throws -> SIPTransport {
        let inbox = self.inbox
        return try await SIPTransport.open(
            kind: .udp, localHost: "127.0.0.1", remote: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
            log: hub.log, user: user, flows: hub, onLost: { _ in inbox.lost.withLock { $0.append(user) } },
            onPong: {}, inbound: { message, _ in inbox.received.withLock { $0[user, default: []].append(message) } })
    }

    func request(_ method: String, from flow: SIPTransport, user: String) -> SIPMessage {
        var request = SIPMessage.request(method, uri: "sip:registrar.example")
        request.headers.add("Via", flow.newVia())
        request.headers.add("From", "<sip:\(user)@example.com>;tag=\(randomToken())")
        request.headers.add("To", "<sip:\(user)@example.com>")
        request.headers.add("Call-ID", randomToken())
        request.headers.add("CSeq", "1 \(method)")
        return request
    }

    /// A request from the peer to `uri`.
    func incoming(_ method: String, to uri: String, toHeader: String? = nil) -> [UInt8] {
        var request = SIPMessage.request(method, uri: uri)
        request.headers.add("Via", "SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bKpeer\(randomToken())")
        request.headers.add("From", "<sip:peer@example.com>;tag=\(randomToken())")
        request.headers.add("To", toHeader ?? "<\(uri)>")
        request.headers.add("Call-ID", randomToken())
        request.headers.add("CSeq", "7 \(method)")
        return request.serialized()
    }

    @Test func twoAccountsShareOneSocketAndEachGetsItsOwnResponsesAndRequests() async throws {
        let peer = try UDPTestPeer()
        let alice = try await flow("alice", to: peer)
        let bob = try await flow("bob", to: peer)
        #expect(hub.socketCount == 1)
        #expect(alice.localPort == bob.localPort && alice.flowTag != bob.flowTag)
        let sent = [request("REGISTER", from: alice, user: "alice"), request("REGISTER", from: bob, user: "bob")]
        for (flow, message) in zip([alice, bob], sent) { try await flow.send(message) }
        // The peer answers what it got in reverse order, then sends each account a request.
        let port = alice.localPort
        await peer.run { peer in
            var got: [(SIPMessage, sockaddr_in)] = []
            while got.count < 2, let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                if let message = try? SIPParser.parse(datagram: bytes) { got.append((message, from)) }
            }
            for (message, from) in got.reversed() {
                peer.send(message.makeResponse(status: 200, reason: "OK", toTag: "t").serialized(), to: from)
            }
            guard let from = got.first?.1 else { return }
            peer.send(self.incoming("OPTIONS", to: "sip:bob@127.0.0.1:\(port)"), to: from)
            peer.send(self.incoming("NOTIFY", to: "sip:alice@127.0.0.1:\(port);transport=udp"), to: from)
            // No user in the Request-URI: the To header's user decides.
            peer.send(
                self.incoming("BYE", to: "sip:127.0.0.1:\(port)", toHeader: "<sip:bob@example.com>;tag=1"), to: from)
        }
        let aliceGot = await inbox.wait(for: "alice", count: 2)
        let bobGot = await inbox.wait(for: "bob", count: 3)
        #expect(aliceGot.map { $0.status ?? 0 } == [200, 0] && aliceGot.last?.method == "NOTIFY")
        #expect(aliceGot.first?.topViaBranch == sent[0].topViaBranch)
        #expect(bobGot.map { $0.method ?? "\($0.status ?? 0)" } == ["200", "OPTIONS", "BYE"])
        #expect(bobGot.first?.topViaBranch == sent[1].topViaBranch)
        #expect(alice.sharedSocket?.dropped == 0)
        await alice.close()
        await bob.close()
        #expect(hub.socketCount == 0)
        #expect(inbox.lost.withLock { $0 }.isEmpty)
    }

    @Test func whatBelongsToNoAccountIsDroppedAndCountedAndTheSocketGoesOn() async throws {
        let peer = try UDPTestPeer()
        let alice = try await flow("alice", to: peer)
        let bob = try await flow("bob", to: peer)  // with two accounts, a request must name one
        try await alice.send(request("OPTIONS", from: alice, user: "alice"))
        let port = alice.localPort
        await peer.run { peer in
            guard let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                let sent = try? SIPParser.parse(datagram: bytes)
            else {
                return
            }
            var strays: [SIPMessage] = []
            for branch in ["z9hG4bKdeadbeef.1", "z9hG4bK\(randomToken())", "no-cookie"] {
                var stray = sent.makeResponse(status: 200, reason: "OK")
                stray.headers.set("Via", "SIP/2.0/UDP 127.0.0.1:\(port);branch=\(branch)")
                strays.append(stray)
            }
            for stray in strays { peer.send(stray.serialized(), to: from) }
            peer.send(self.incoming("INVITE", to: "sip:carol@127.0.0.1:\(port)"), to: from)
            peer.send(Array("not SIP at all\r\n\r\n".utf8), to: from)
            peer.send(sent.makeResponse(status: 200, reason: "OK").serialized(), to: from)  // alice's own, last
        }
        let got = await inbox.wait(for: "alice", count: 1)
        #expect(got.count == 1 && got.first?.topViaBranch == alice.flowTagged(got.first))
        for _ in 0..<200 where alice.sharedSocket?.dropped ?? 0 < 4 { try? await Task.sleep(for: .milliseconds(25)) }
        #expect(alice.sharedSocket?.dropped == 4)
        #expect(alice.isActive && inbox.messages(of: "bob").isEmpty)
        await alice.close()
        await bob.close()
    }

    @Test func theOnlyAccountOnASocketTakesEveryRequest() async throws {
        let peer = try UDPTestPeer()
        let alice = try await flow("alice", to: peer)
        try await alice.send(request("OPTIONS", from: alice, user: "alice"))
        let port = alice.localPort
        await peer.run { peer in
            guard let (_, from) = peer.receive(within: UDPTestPeer.arrivalGuard) else { return }
            peer.send(self.incoming("INVITE", to: "sip:callee@127.0.0.1:\(port)"), to: from)
        }
        let got = await inbox.wait(for: "alice", count: 1)
        #expect(got.map(\.method) == ["INVITE"])
        #expect(alice.sharedSocket?.dropped == 0)
        await alice.close()
    }

    @Test func aSecondAccountWithTheSameUserGetsASocketOfItsOwn() async throws {
        let peer = try UDPTestPeer()
        let first = try await flow("alice", to: peer)
        let second = try await flow("alice", to: peer)
        #expect(hub.socketCount == 2 && first.localPort != second.localPort)
        await first.close()
        #expect(hub.socketCount == 1 && second.isActive)
        await second.close()
        #expect(hub.socketCount == 0)
    }

    @Test func aSocketTheRegistrarRefusesEndsEveryFlowOnItOnce() async throws {
        var peer: UDPTestPeer? = try UDPTestPeer()
        let port = peer!.port
        let alice = try await flow("alice", to: peer!)
        let bob = try await flow("bob", to: peer!)
        peer = nil  // closed: the next datagram gets ICMP port unreachable
        try? await alice.send(request("OPTIONS", from: alice, user: "alice"))
        for _ in 0..<200 where inbox.lost.withLock({ $0.count }) < 2 { try? await Task.sleep(for: .milliseconds(25)) }
        #expect(inbox.lost.withLock { $0.sorted() } == ["alice", "bob"], "port \(port)")
        #expect(!alice.isActive && !bob.isActive && hub.socketCount == 0)
        await alice.close()
        #expect(inbox.lost.withLock { $0.count } == 2)
    }

    @Test func anAbandonedFlowIsLostAloneAndTheSocketStaysForTheOthers() async throws {
        let peer = try UDPTestPeer()
        let alice = try await flow("alice", to: peer)
        let bob = try await flow("bob", to: peer)
        await alice.abandon()
        #expect(inbox.lost.withLock { $0 } == ["alice"])
        #expect(!alice.isActive && bob.isActive && hub.socketCount == 1)
        let again = try await flow("alice", to: peer)
        #expect(again.localPort == bob.localPort)
        await again.close()
        await bob.close()
        #expect(hub.socketCount == 0)
    }

    @Test func theAccountsOfOneSocketShareOneFlowPing() async throws {
        let peer = try UDPTestPeer()
        let alice = try await flow("alice", to: peer)
        let socket = try #require(alice.sharedSocket)
        let runs = Mutex(0)
        let gate = AsyncStream<Void>.makeStream()
        let ping: @Sendable () async -> Bool = {
            runs.withLock { $0 += 1 }
            for await _ in gate.stream { break }  // held until every caller waits
            return true
        }
        let callers = (0..<10).map { _ in Task { await socket.proveAlive(fresh: .seconds(60), ping) } }
        for _ in 0..<200 where runs.withLock({ $0 }) == 0 { try? await Task.sleep(for: .milliseconds(10)) }
        try? await Task.sleep(for: .milliseconds(100))
        gate.continuation.yield()
        var answers: [Bool] = []
        for caller in callers { answers.append(await caller.value) }
        #expect(answers == Array(repeating: true, count: 10))
        #expect(await socket.proveAlive(fresh: .seconds(60), ping))  // answered just now: no new ping
        #expect(runs.withLock { $0 } == 1)
        gate.continuation.finish()
        #expect(await socket.proveAlive(fresh: .zero, ping))  // stale: pings again
        #expect(runs.withLock { $0 } == 2)
        await alice.close()
    }

    @Test(arguments: [
        ("z9hG4bKab12cd34.0011223344556677", "ab12cd34"), ("z9hG4bKnodot", nil), ("abc.def", nil),
        ("z9hG4bK.x", ""),
    ])
    func theFlowTagIsReadFromTheBranch(branch: String, tag: String?) {
        #expect(DatagramRoutes<Int>.tag(ofBranch: branch) == tag)
    }
}

extension SIPTransport {
    /// The message's top Via branch when this flow made it (its tag starts the branch).
    func flowTagged(_ message: SIPMessage?) -> String? {
        guard let branch = message?.topViaBranch, DatagramRoutes<Int>.tag(ofBranch: branch) == flowTag else {
            return nil
        }
        return branch
    }
}
