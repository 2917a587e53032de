import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Responses on a flow reach the runtime as `.flowActive` (so the flow's ping waits): real
/// datagrams from a scripted loopback peer for the wire, instants passed in for the gap.
@Suite(.timeLimit(.minutes(3)))
struct FlowActivityTests {
    @Test func aMatchedResponseIsReportedWithTheRegistrationAndAStrayOneIsNot() async throws {
        let peer = try UDPTestPeer()
        let recorder = LossRecorder()
        let account = SIPAccount(
            name: "active", registrarHost: "127.0.0.1", registrarPort: peer.port, transport: .udp, user: "active",
            domain: "127.0.0.1", password: "secret", expires: 300)
        let agent = SIPUserAgent(
            account: account, logger: testLogger("activity"), onFlowActive: { recorder.record($0) })
        let script = Task {
            await peer.run { peer -> Bool in
                guard let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                    let request = try? SIPParser.parse(datagram: bytes)
                else { return false }
                // A response no transaction of the agent's waits for comes first: it proves nothing.
                var stray = request.makeResponse(status: 200, reason: "OK", toTag: "stray")
                stray.headers.set("Via", "SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bKnotyours")
                peer.send(stray.serialized(), to: from)
                peer.send(request.makeResponse(status: 200, reason: "OK", toTag: "p").serialized(), to: from)
                return true
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await script.value)
        // The report is made on the flow's thread right after the answer is handed over.
        #expect(await eventually(within: .seconds(10)) { !recorder.all.isEmpty })
        #expect(recorder.all == [[account.registrationService]])
        await agent.close()
    }

    @Test(arguments: [(Duration.milliseconds(999), 1), (.seconds(1), 2), (.seconds(30), 3)])
    func aBurstOfResponsesIsReportedOncePerGap(gap: Duration, reports: Int) {
        let recorder = LossRecorder()
        let activity = FlowActivity(services: ["a.registration"]) { recorder.record($0) }
        let start = ContinuousClock.now
        activity.responseArrived(at: start)
        activity.responseArrived(at: start + gap / 2)
        activity.responseArrived(at: start + gap)
        #expect(recorder.all.count == reports)
        #expect(recorder.all.allSatisfy { $0 == ["a.registration"] })
    }
}
