import Foundation
import Logging
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Issue 13 item 5: a peer cannot flood the log (warnings are rate-limited per kind, with a
/// count of what was suppressed) or forge lines in it (wire values are escaped).
@Suite(.timeLimit(.minutes(3)))
struct SIPLogFloodTests {
    /// An OPTIONS from the peer; its answer proves every datagram sent before it was read.
    static func probe(_ index: Int, port: Int) -> [UInt8] {
        peerRequest(
            "OPTIONS", uri: "sip:flood@127.0.0.1", sentBy: "127.0.0.1:\(port)", branch: "z9hG4bKprobe\(index)",
            callID: "probe-\(index)", cseq: index + 1
        ).serialized()
    }

    /// Not SIP: a header name with a raw ESC sequence and a NUL.
    static let malformed = Array("OPTIONS sip:x SIP/2.0\r\nX\u{1B}[31mred\u{0}: y\r\n\r\n".utf8)

    @Test func aThousandMalformedDatagramsGiveABoundedEscapedLogWithASuppressedCount() async throws {
        let peer = try UDPTestPeer()
        let port = peer.port
        let records = LogRecords()
        let logger = Logger(label: "flood") { _ in RecordingLogHandler(records) }
        let clock = ManualClock()
        let account = SIPAccount(
            name: "flood", registrarHost: "127.0.0.1", registrarPort: port, user: "flood", domain: "127.0.0.1",
            password: "secret", expires: 300, flowPing: .off)
        let agent = SIPUserAgent(account: account, logger: logger, clock: clock)
        // The registrar's side: answer the REGISTER (the flow is open), then flood it in rounds
        // of 100, each closed by a probe whose answer says the round was read (no socket overflow).
        let script = Task {
            await peer.run { peer -> Int in
                guard
                    let (register, from) = SIPSubscriptionPeerTests.nextRequest(
                        peer, within: UDPTestPeer.arrivalGuard)
                else { return -1 }
                peer.send(register.makeResponse(status: 200, reason: "OK", toTag: "r").serialized(), to: from)
                var answered = 0
                for round in 0..<10 {
                    for _ in 0..<100 { peer.send(Self.malformed, to: from) }
                    peer.send(Self.probe(round, port: port), to: from)
                    guard peer.receive(within: UDPTestPeer.arrivalGuard) != nil else { return answered }
                    answered += 1
                }
                return answered
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await script.value == 10)
        let logged = records.named("sip.malformed-datagram")
        #expect(logged.count == ThrottledLog.limit)
        #expect(records.named("sip.log-suppressed").isEmpty, "the summary waits for the window to end")

        // After the window, the next one is logged behind the count of the 990 held back.
        clock.advance(by: ThrottledLog.window)
        let after = Task {
            await peer.run { peer -> Bool in
                // A REGISTER tells the peer where the agent listens; answer it, then one more.
                guard
                    let (register, from) = SIPSubscriptionPeerTests.nextRequest(
                        peer, within: UDPTestPeer.arrivalGuard)
                else { return false }
                peer.send(register.makeResponse(status: 200, reason: "OK", toTag: "r").serialized(), to: from)
                peer.send(Self.malformed, to: from)
                peer.send(Self.probe(99, port: port), to: from)
                return peer.receive(within: UDPTestPeer.arrivalGuard) != nil
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await after.value)
        let summary = try #require(records.named("sip.log-suppressed").first)
        #expect(summary.metadata["count"] == "990")
        #expect(summary.metadata["kind"] == "sip.malformed-datagram")
        #expect(records.named("sip.malformed-datagram").count == ThrottledLog.limit + 1)

        // Escaped, never raw.
        let reason = try #require(logged.first?.metadata["reason"]).description
        #expect(reason.contains("\\x1B[31mred\\0"))
        #expect(!records.all.contains { $0.line.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0 } })
        await agent.close()
    }
}
