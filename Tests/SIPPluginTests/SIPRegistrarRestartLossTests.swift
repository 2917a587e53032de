import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// A UDP registrar that stops and starts again, scripted on one loopback port: while it is down
/// every flow to it ends with ICMP port unreachable, so each REGISTER retry loses a flow too.
/// Each loss report becomes a `flow.lost` decision (some only after the runtime's loss throttle
/// held them), and each decision that names a subscription SUBSCRIBEs it: a subscription named
/// by a report held back past the retry that bound the account again was SUBSCRIBEd twice.
@Suite(.timeLimit(.minutes(3)))
struct SIPRegistrarRestartLossTests {
    /// Serves `requests` requests (200 to each) on 127.0.0.1:`port` and closes the port again:
    /// on return nothing listens there any more. The methods it saw, in order.
    static func serveAndStop(port: Int, requests: Int) async throws -> [String] {
        var peer: UDPTestPeer? = try UDPTestPeer(port: port)
        let log = await peer!.run { SIPSubscriptionFlowTests.serve($0, requests: requests) }
        weak let stopped = peer
        peer = nil
        // The script's thread lets go of the peer just after it answered; the socket closes then.
        let closed = await eventually(within: .seconds(5)) { stopped == nil }
        try #require(closed, "the scripted registrar's socket is still open")
        return log.map { String($0.prefix { $0 != " " }) }
    }

    @Test func aSubscriptionIsReportedLostOnceHoweverManyFlowsFailWhileItsRegistrarIsDown() async throws {
        let port = try LoopbackPort.free()
        let target = SubscriptionTarget(package: .reg, expires: 300)
        let account = SIPAccount(
            name: "restart", registrarHost: "127.0.0.1", registrarPort: port, user: "restart", domain: "127.0.0.1",
            password: "secret", expires: 300, subscriptions: [target])
        let recorder = LossRecorder()
        let agent = SIPUserAgent(account: account, logger: testLogger("restart")) { recorder.record($0) }
        let registration = account.registrationService
        let subscription = target.service(of: account)
        let path = loopbackPath()

        let beforeStop = Task { try await Self.serveAndStop(port: port, requests: 2) }
        try await agent.register(path: path)
        try await agent.subscribe(target, service: subscription, path: path)
        #expect(try await beforeStop.value == ["REGISTER", "SUBSCRIBE"])

        // The registrar is down: the flow ping's flow is lost, then the flow of each REGISTER retry.
        await #expect(throws: PluginError.self) { try await agent.sendFlowPing(path: path) }
        #expect(await eventually(within: .seconds(5)) { recorder.all.count == 1 })
        for retry in 1...2 {
            await #expect(throws: PluginError.self) { try await agent.register(path: path) }
            #expect(await eventually(within: .seconds(5)) { recorder.all.count == 1 + retry })
        }

        // Up again: the retry binds the account, and the subscription is made again, once.
        let afterStart = Task { try await Self.serveAndStop(port: port, requests: 2) }
        try await agent.register(path: path)
        try await agent.subscribe(target, service: subscription, path: path)
        #expect(try await afterStart.value == ["REGISTER", "SUBSCRIBE"])
        await agent.close()

        #expect(
            recorder.all == [[registration, subscription], [registration], [registration]],
            "each report that names the subscription makes the runtime SUBSCRIBE it once more")
    }
}
