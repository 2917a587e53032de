import Foundation
import NIOCore
import Testing

@testable import SIPPlugin

/// A request at an account's Contact whose top `Via` names another host (`;received=VICTIM;rport=PORT`)
/// must not make the client a reflector: RFC 3261 §18.2.1 says the server sets `received` to
/// "the source address from which the packet was received", and RFC 3581 §4 that "the response
/// MUST be sent to the IP address listed in the "received" parameter, and the port in the "rport"
/// parameter", which the server set from the packet. Two UDP services on loopback stand for a
/// third host (127.0.0.2) and a service on the client's own loopback (127.0.0.1).
@Suite(.timeLimit(.minutes(3)))
struct ContactForgedViaTests {
    @Test func aForgedReceivedAndRportIsAnsweredAtTheSourceAndNothingReachesTheVictims() async throws {
        let twin = ContactTwinTests()
        let registrar = try UDPTestPeer()
        let bob = try await twin.flow("bob", to: registrar)
        let contact = "sip:bob@127.0.0.1:\(bob.localPort)"
        let thirdHost = try UDPTestPeer(host: "127.0.0.2")
        let ownLoopback = try UDPTestPeer()
        var toThirdHost = ContactProbe.options(to: contact, sentBy: "198.18.0.77:5060")
        toThirdHost.headers.set(
            "Via", "SIP/2.0/UDP 198.18.0.77:5060;received=127.0.0.2;rport=\(thirdHost.port);branch=z9hG4bKforged1")
        var toOwnLoopback = ContactProbe.options(to: contact, sentBy: "198.18.0.77:5060")
        toOwnLoopback.headers.set(
            "Via", "SIP/2.0/UDP 127.0.0.1:\(ownLoopback.port);rport=\(ownLoopback.port);branch=z9hG4bKforged2")
        let requests = [toThirdHost.serialized(), toOwnLoopback.serialized()]
        let stranger = try UDPTestPeer()
        let target = ContactProbe.address("127.0.0.1", bob.localPort)
        let answers = await stranger.run { peer -> [SIPMessage] in
            var answers: [SIPMessage] = []
            for request in requests { peer.send(request, to: target) }
            while answers.count < requests.count, let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                if let message = try? SIPParser.parse(datagram: bytes), !message.isRequest { answers.append(message) }
            }
            return answers
        }
        #expect(answers.count == 2 && answers.allSatisfy { $0.status == 200 }, "both answered at their source")
        for answer in answers {
            let via = answer.headers.listValues("Via").first ?? ""
            #expect(via.contains(";rport=\(stranger.port)") && !via.contains("127.0.0.2"), "\(via)")
        }
        // Both answers went out; anything misdirected would have arrived by now (same write path).
        let reflected = await thirdHost.run { $0.receive(within: 1)?.bytes.count }
        let looped = await ownLoopback.run { $0.receive(within: 1)?.bytes.count }
        #expect(reflected == nil, "nothing reached the third host")
        #expect(looped == nil, "nothing reached the service on the client's loopback")
        await bob.close()
    }
}
