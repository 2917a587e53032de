import Foundation
import NetworkLab
import ResilienceCore
import Synchronization
import Testing

@testable import SIPPlugin

/// While the runtime's path is unsatisfied the agent answers nothing: a request that arrived
/// just before the loss (a NOTIFY, an OPTIONS) gets no answer on a path netlink shows down;
/// the server's retransmission after the return gets it.
@Suite(.timeLimit(.minutes(3)))
struct SIPReplyGateTests {
    /// An out-of-dialog OPTIONS from the peer, with a fixed branch so a resend is a retransmission.
    static func options(port: Int) -> [UInt8] {
        var message = SIPMessage(startLine: .request(method: "OPTIONS", uri: "sip:gated@127.0.0.1"))
        message.headers.add("Via", "SIP/2.0/UDP 127.0.0.1:\(port);branch=z9hG4bKgate1")
        message.headers.add("From", "<sip:registrar@127.0.0.1>;tag=gate")
        message.headers.add("To", "<sip:gated@127.0.0.1>")
        message.headers.add("Call-ID", "gate-options")
        message.headers.add("CSeq", "1 OPTIONS")
        message.headers.add("Max-Forwards", "70")
        return message.serialized()
    }

    /// Steps the test and the peer's thread hand each other (no timing between them).
    enum Step: Int { case registered, pathDown, askedWhileDown, pathUp }

    @Test func answersAreHeldWhileThePathIsDownAndAResendIsAnsweredAfterIt() async throws {
        let peer = try UDPTestPeer()
        let account = SIPAccount(
            name: "gated", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "gated", domain: "127.0.0.1",
            password: "secret", expires: 300)
        let plugin = SIPPlugin(accounts: [account], logger: testLogger("reply-gate"))
        let port = peer.port
        let step = Mutex(Step.registered)
        @Sendable func wait(for wanted: Step) -> Bool {
            for _ in 0..<3000 {
                if step.withLock({ $0.rawValue >= wanted.rawValue }) { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return false
        }
        let script = Task {
            await peer.run { peer -> [String] in
                guard let (register, from) = SIPSubscriptionPeerTests.nextRequest(peer, within: 30) else { return [] }
                var ok = register.makeResponse(status: 200, reason: "OK", toTag: "reg")
                for contact in register.headers.values("Contact") { ok.headers.add("Contact", contact) }
                peer.send(ok.serialized(), to: from)
                // The agent's flow is `from`.
                guard wait(for: .pathDown) else { return ["path never down"] }
                peer.send(Self.options(port: port), to: from)
                let whileDown = SIPSubscriptionPeerTests.nextRequest(peer, within: 2).map { "\($0.0.status ?? 0)" }
                step.withLock { $0 = .askedWhileDown }
                guard wait(for: .pathUp) else { return ["path never up"] }
                peer.send(Self.options(port: port), to: from)
                let afterReturn = SIPSubscriptionPeerTests.nextRequest(peer, within: UDPTestPeer.arrivalGuard).map {
                    "\($0.0.status ?? 0)"
                }
                return [whileDown ?? "nothing", afterReturn ?? "nothing"]
            }
        }
        try await plugin.perform(action(.register, account.registrationService), context: context())
        plugin.pathChanged(NetworkPath(status: .unsatisfied(.noCarrier)))
        step.withLock { $0 = .pathDown }
        _ = await eventually(within: .seconds(30)) { step.withLock { $0 == .askedWhileDown } }
        plugin.pathChanged(loopbackPath())
        step.withLock { $0 = .pathUp }
        let answers = await script.value
        #expect(answers == ["nothing", "200"])
        await plugin.agent(for: account.name)?.close()
    }
}
