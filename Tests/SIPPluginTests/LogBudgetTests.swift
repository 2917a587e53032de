import Foundation
import Logging
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// One log budget per process and kind: a peer spraying twenty accounts gets no more lines of a
/// kind than one account would (the plugin hands its budget to every account).
@Suite(.timeLimit(.minutes(3)))
struct LogBudgetTests {
    @Test func straysAtTwentyAccountsShareOneBudgetOfLines() async throws {
        let registrar = try UDPTestPeer()
        let port = registrar.port
        let records = LogRecords()
        let logger = Logger(label: "budget") { _ in RecordingLogHandler(records) }
        let accounts = (0..<20).map { index in
            SIPAccount(
                name: "user\(index)", registrarHost: "127.0.0.1", registrarPort: port, user: "user\(index)",
                domain: "127.0.0.1", password: "secret", expires: 300, flowPing: .off)
        }
        let plugin = SIPPlugin(accounts: accounts, logger: logger)
        let answering = Task {
            await registrar.run { peer -> Int in
                var answered = 0
                while answered < accounts.count,
                    let (register, from) = SIPSubscriptionPeerTests.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
                {
                    peer.send(register.makeResponse(status: 200, reason: "OK", toTag: "r").serialized(), to: from)
                    answered += 1
                }
                return answered
            }
        }
        for account in accounts {
            try await plugin.perform(action(.register, account.registrationService), context: context())
        }
        #expect(await answering.value == accounts.count)
        let agentPort = try #require(await plugin.agent(for: "user0")?.transport?.localPort)
        let tags = accounts.compactMap { plugin.agent(for: $0.name)?.flowTag }
        // 15 responses no transaction waits for, at each account (routed by the branch's tag).
        let strays = tags.flatMap { tag in
            (0..<15).map { index in
                peerRequest(
                    "OPTIONS", uri: "sip:user@127.0.0.1", sentBy: "127.0.0.1:\(agentPort)",
                    branch: "z9hG4bK\(tag).stray\(index)", callID: "stray-\(tag)-\(index)"
                ).makeResponse(status: 200, reason: "OK").serialized()
            }
        }
        let probe = peerRequest(
            "OPTIONS", uri: "sip:user0@127.0.0.1", sentBy: "127.0.0.1:\(port)", branch: "z9hG4bKbudgetprobe",
            callID: "budget-probe"
        ).serialized()
        let target = ContactProbe.address("127.0.0.1", agentPort)
        let probed = await registrar.run { peer -> Bool in
            for (index, stray) in strays.enumerated() {
                peer.send(stray, to: target)
                if index % 50 == 49 { usleep(20_000) }  // within the socket's buffer
            }
            peer.send(probe, to: target)
            return peer.receive(within: UDPTestPeer.arrivalGuard) != nil
        }
        #expect(probed, "the probe's answer says every stray before it was read")
        let logged = records.named("sip.stray-response").count
        #expect(logged == ThrottledLog.limit, "\(logged) lines for \(strays.count) strays at \(tags.count) accounts")
        for account in accounts { await plugin.agent(for: account.name)?.close() }
    }
}
