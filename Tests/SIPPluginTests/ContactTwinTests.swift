import ChildProcesses
import Foundation
import Glibc
import NIOCore
import NetworkLab
import Synchronization
import Testing

@testable import SIPPlugin

/// The unconnected twin of a shared UDP socket (``ContactListener``), with a scripted registrar
/// on loopback: requests from other sources reach the account their Request-URI names, answers
/// go back from the same port, responses go to the account their branch names (for its
/// transactions: a dialog's remote target answers at the Contact), and a thousand accounts
/// still cost one socket and its twin.
@Suite(.timeLimit(.minutes(3)))
struct ContactTwinTests {
    let hub = DatagramFlowHub(log: ThrottledLog(logger: testLogger("contact-twin"), clock: ContinuousClock()))
    let inbox = SharedDatagramFlowTests.Inbox()

    /// A flow of `user` to `registrar` whose inbound handler records what came and answers
    /// every request 200.
    func flow(_ user: String, to registrar: UDPTestPeer) async throws -> SIPTransport {
        let inbox = self.inbox
        return try await SIPTransport.open(
            kind: .udp, localHost: "127.0.0.1", remote: try SocketAddress(ipAddress: "127.0.0.1", port: registrar.port),
            log: hub.log, user: user, flows: hub, onLost: { _ in }, onPong: {},
            inbound: { message, reply in
                inbox.received.withLock { $0[user, default: []].append(message) }
                if message.isRequest { reply(message.makeResponse(status: 200, reason: "OK")) }
            })
    }

    /// The sockets bound to 127.0.0.1:`port` now, as /proc/net/udp lists them.
    static func socketsBound(to port: Int) -> Int {
        let local = String(format: " 0100007F:%04X ", port)
        return ChildProcess.contents(of: "/proc/net/udp").split(separator: "\n").filter { $0.contains(local) }.count
    }

    @Test func aRequestFromAnotherSourceReachesTheAccountItNamesAndIsAnsweredFromTheSamePort() async throws {
        let registrar = try UDPTestPeer()
        let alice = try await flow("alice", to: registrar)
        let bob = try await flow("bob", to: registrar)
        let contact = "sip:bob@127.0.0.1:\(bob.localPort)"
        let stranger = try UDPTestPeer()
        let request = ContactProbe.options(to: contact, sentBy: "198.18.0.77:5060")
        var stray = request.makeResponse(status: 200, reason: "OK")
        stray.headers.set("Via", "SIP/2.0/UDP 127.0.0.1:\(bob.localPort);branch=z9hG4bK\(bob.flowTag).forged")
        let (target, strayBytes) = (ContactProbe.address("127.0.0.1", bob.localPort), stray.serialized())
        let answer = await stranger.run { peer -> (SIPMessage, Int)? in
            peer.send(strayBytes, to: target)
            peer.send(request.serialized(), to: target)
            guard let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                let message = try? SIPParser.parse(datagram: bytes)
            else { return nil }
            return (message, ContactProbe.port(of: from))
        }
        let (response, fromPort) = try #require(answer, "the stranger got an answer")
        #expect(response.status == 200 && fromPort == bob.localPort)
        // RFC 3261 §18.2.1: the sent-by (198.18.0.77) is not where it came from.
        #expect(response.headers["Via"]?.contains(";received=127.0.0.1") == true)
        // A response at the twin goes to the account its branch names, for its transactions (the
        // remote target of a dialog with no route set answers there; one that matches no
        // transaction is dropped by the transaction layer), never to another account.
        let got = await inbox.wait(for: "bob", count: 2)
        #expect(got.map(\.method) == [nil, "OPTIONS"], "bob got the response (for its transactions) and the request")
        #expect(got.first?.status == 200)
        #expect(inbox.messages(of: "alice").isEmpty)
        #expect(bob.sharedSocket?.gate.refused == 0, "nothing was over the rate")
        await alice.close()
        await bob.close()
    }

    @Test func aFloodAimedAtOneAccountLeavesTheOtherOnTheSocketAlone() async throws {
        let registrar = try UDPTestPeer()
        let alice = try await flow("alice", to: registrar)
        let bob = try await flow("bob", to: registrar)
        let port = alice.localPort
        let flood = (0..<200).map { _ in
            ContactProbe.options(to: "sip:alice@127.0.0.1:\(port)", sentBy: "127.0.0.1:9").serialized()
        }
        let probe = ContactProbe.options(to: "sip:bob@127.0.0.1:\(port)", sentBy: "127.0.0.1:9").serialized()
        let stranger = try UDPTestPeer()
        let target = ContactProbe.address("127.0.0.1", port)
        let started = ContinuousClock.now
        let bobAnswered = await stranger.run { peer -> Bool in
            for request in flood {
                peer.send(request, to: target)
                usleep(200)  // within the socket's buffer: the gate, not the kernel, decides
            }
            // A loaded machine may drop datagrams before the gate sees them: bob asks again.
            for _ in 0..<5 {
                peer.send(probe, to: target)
                while let (bytes, _) = peer.receive(within: 1) {
                    let message = try? SIPParser.parse(datagram: bytes)
                    if message?.headers["To"]?.contains("sip:bob@") == true { return true }
                }
            }
            return false
        }
        let elapsed = (ContinuousClock.now - started) / .seconds(1)
        #expect(bobAnswered, "bob's own bucket was untouched by the flood at alice")
        let aliceGot = inbox.messages(of: "alice").count
        let bound = ContactAdmission().burst + Int(elapsed * Double(ContactAdmission().rate)) + 1
        #expect(aliceGot > 0 && aliceGot <= bound, "alice got \(aliceGot) of 200 in \(elapsed) s")
        #expect((alice.sharedSocket?.gate.refused ?? 0) > 0)
        await alice.close()
        await bob.close()
    }

    @Test func aThousandAccountsOnOneRegistrarCostOneSocketAndItsTwin() async throws {
        let registrar = try UDPTestPeer()
        var flows: [SIPTransport] = []
        for index in 0..<1_000 { flows.append(try await flow("user\(index)", to: registrar)) }
        let port = try #require(flows.first?.localPort)
        #expect(flows.allSatisfy { $0.localPort == port } && hub.socketCount == 1)
        #expect(Self.socketsBound(to: port) == 2, "the connected socket and its unconnected twin")
        for flow in flows { await flow.close() }
        #expect(await eventually(within: .seconds(10)) { Self.socketsBound(to: port) == 0 }, "both closed")
    }
}
