import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// The agent carries out its call machine's wait for the ACK (RFC 3261 §13.3.1.4) on the wire:
/// a caller at the account's Contact (a plain UDP socket, so the test decides when the ACK goes;
/// a real Kamailio on loopback is the registrar) sees our 2xx again until it ACKs, and no more
/// once it has.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct ContactAckWaitTests {
    /// What the caller at `sentBy` sends: `method` in call `callID`, with `toTag` once it has one.
    static func request(
        _ method: String, cseq: Int, to contact: String, sentBy: String, callID: String, toTag: String?
    ) -> SIPMessage {
        var request = SIPMessage.request(method, uri: contact)
        request.headers.add("Via", "SIP/2.0/UDP \(sentBy);rport;branch=z9hG4bKack\(randomToken())")
        request.headers.add("From", "<sip:caller@\(sentBy)>;tag=caller-tag")
        request.headers.add("To", "<\(contact)>" + (toTag.map { ";tag=\($0)" } ?? ""))
        request.headers.add("Call-ID", callID)
        request.headers.add("CSeq", "\(cseq) \(method)")
        request.headers.add("Contact", "<sip:caller@\(sentBy)>")
        request.headers.add("Max-Forwards", "70")
        if method == "INVITE" {
            request.headers.add("Content-Type", "application/sdp")
            request.body = Array(
                "v=0\r\no=caller 2000 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
                    .utf8)
        }
        return request
    }

    /// The 200s to an INVITE among what `peer` receives within `seconds`, and the To tag of the
    /// last one (bounded: at most 64 datagrams).
    static func okays(at peer: UDPTestPeer, within seconds: Double) -> (count: Int, toTag: String?) {
        let deadline = Date().addingTimeInterval(seconds)
        var (count, tag): (Int, String?) = (0, nil)
        for _ in 0..<64 {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let (bytes, _) = peer.receive(within: left) else { break }
            guard let message = try? SIPParser.parse(datagram: bytes), message.status == 200,
                message.cseq?.method == "INVITE"
            else { continue }
            count += 1
            tag = message.tag(in: "To") ?? tag
        }
        return (count, tag)
    }

    @Test func our2xxIsResentUntilTheCallersAckAndNotAfterIt() async throws {
        try await withLoopbackRegistrar { kamailio in
            let f = try await ContactCallFixture("ackwait", at: kamailio)
            let contact = try #require(await f.agent.registrationStatus.contact)
            let peer = try UDPTestPeer()
            let (sentBy, callID, host, port) = ("127.0.0.1:\(peer.port)", randomToken(), f.host, f.port)
            let invite = Self.request("INVITE", cseq: 1, to: contact, sentBy: sentBy, callID: callID, toTag: nil)
            await peer.run { $0.send(invite.serialized(), to: ContactProbe.address(host, port)) }
            let call = try #require(await f.rung(), "the INVITE sent to the Contact rang")
            try await f.agent.answer(call, path: loopbackPath())

            // §13.3.1.4: "The server retransmits the 2xx response until it receives an ACK": the
            // first 200 and at least one resend (T1 = 0.5 s, then 1.5 s) before any ACK.
            let unacknowledged = await peer.run { Self.okays(at: $0, within: 2.5) }
            #expect(unacknowledged.count >= 2, "200s heard before the ACK: \(unacknowledged.count)")
            #expect(await f.agent.calls[call]?.awaitingAck == 1)

            let toTag = try #require(unacknowledged.toTag)
            let ack = Self.request("ACK", cseq: 1, to: contact, sentBy: sentBy, callID: callID, toTag: toTag)
            await peer.run { $0.send(ack.serialized(), to: ContactProbe.address(host, port)) }
            #expect(await eventually(within: .seconds(10)) { await f.agent.calls[call]?.awaitingAck == nil })
            _ = await peer.run { Self.okays(at: $0, within: 0.2) }  // a resend already on its way
            // Without the ACK a resend would come within T2 (4 s).
            let afterAck = await peer.run { Self.okays(at: $0, within: 4.5) }
            #expect(afterAck.count == 0, "200s after the ACK: \(afterAck.count)")
            #expect(await f.agent.activeCalls[call] == .active)

            let bye = Self.request("BYE", cseq: 2, to: contact, sentBy: sentBy, callID: callID, toTag: toTag)
            await peer.run { $0.send(bye.serialized(), to: ContactProbe.address(host, port)) }
            let ended = await f.recorder.events(until: { $0.phase == .ended }, within: 10).last
            #expect(ended?.call == call && ended?.reason == "BYE")
            await f.agent.close()
        }
    }
}
