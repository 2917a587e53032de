import Foundation
import NetworkLab
import ResilienceCore
import Synchronization
import Testing

@testable import SIPPlugin

/// A SUBSCRIBE that finds a flow no REGISTER went through (the address changed again after the
/// account's REGISTER succeeded) registers through it first, instead of waiting for a REGISTER
/// that no decision sends; the plugin reports the new binding, so its refresh is re-armed.
@Suite(.timeLimit(.minutes(3)))
struct SIPSubscriptionFlowTests {
    /// The scripted registrar's log: each request's method and the address it came from.
    static func serve(_ peer: UDPTestPeer, requests: Int) -> [String] {
        var log: [String] = []
        while log.count < requests {
            guard let (request, from) = SIPSubscriptionPeerTests.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
            else { return log }
            guard let method = request.method else { continue }
            log.append("\(method) from \(String(cString: inet_ntoa(from.sin_addr)))")
            var response = request.makeResponse(status: 200, reason: "OK", toTag: "srv")
            if method == "REGISTER" {
                for contact in request.headers.values("Contact") { response.headers.add("Contact", contact) }
            } else {
                response.headers.add("Contact", "<sip:notifier@127.0.0.1:\(peer.port)>")
            }
            response.headers.add("Expires", "300")
            peer.send(response.serialized(), to: from)
        }
        return log
    }

    @Test func aSubscribeOnAFlowNoRegisterWentThroughRegistersThroughItFirst() async throws {
        let peer = try UDPTestPeer()
        let account = SIPAccount(
            name: "mover", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "mover", domain: "127.0.0.1",
            password: "secret", expires: 300, subscriptions: [SubscriptionTarget(package: .reg, expires: 300)])
        let plugin = SIPPlugin(accounts: [account], logger: testLogger("subscription-flow"))
        let subscription = account.subscriptions[0].service(of: account)
        let script = Task { await peer.run { Self.serve($0, requests: 3) } }
        try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.1"))
        // The address changed after that REGISTER's 200; only the SUBSCRIBE is asked for.
        try await plugin.perform(action(.subscribe, subscription), context: context("127.0.0.2"))
        let log = await script.value
        #expect(log == ["REGISTER from 127.0.0.1", "REGISTER from 127.0.0.2", "SUBSCRIBE from 127.0.0.2"])
        let status = await plugin.registrationStatus(of: account.name)
        #expect(status?.contact?.contains("@127.0.0.2:") == true, "\(String(describing: status))")
        // Both REGISTERs reached the manager as registration changes (the second from the SUBSCRIBE).
        let registrationReports = Mutex(0)
        let reader = Task {
            for await report in plugin.reports {
                guard case .serviceChanged(let service) = report, service.id == account.registrationService,
                    service.expires != nil
                else { continue }
                registrationReports.withLock { $0 += 1 }
            }
        }
        _ = await eventually(within: .seconds(5)) { registrationReports.withLock { $0 } >= 2 }
        reader.cancel()
        #expect(registrationReports.withLock { $0 } == 2)
        await plugin.agent(for: account.name)?.close()
    }

    /// The notifier's final NOTIFY overtakes its 200 to our `Expires: 0`: it ends a subscription
    /// we are ending, so nothing asks the runtime to subscribe again.
    @Test func aFinalNotifyThatOvertakesTheUnsubscribesAnswerAsksForNoResubscribe() async throws {
        let peer = try UDPTestPeer()
        let port = peer.port
        let losses = LossRecorder()
        let account = SIPAccount(
            name: "leaver", registrarHost: "127.0.0.1", registrarPort: port, user: "leaver", domain: "127.0.0.1",
            password: "secret", expires: 300)
        let agent = SIPUserAgent(account: account, logger: testLogger("unsubscribe-race"), onFlowLost: losses.record)
        let service: ServiceID = "leaver.subscription.reg"
        let script = Task {
            await peer.run { peer -> [String] in
                var log: [String] = []
                let first = UDPTestPeer.arrivalGuard
                guard let (subscribe, from) = SIPSubscriptionPeerTests.nextRequest(peer, within: first) else {
                    return log
                }
                peer.send(SIPSubscriptionPeerTests.accept(subscribe, tag: "srv", port: port), to: from)
                guard let (end, _) = SIPSubscriptionPeerTests.nextRequest(peer) else { return log }
                log.append("unsubscribe expires=\(end.headers["Expires"] ?? "-")")
                // The final NOTIFY first, its answer, then the 200 to the SUBSCRIBE.
                let final = SIPSubscriptionPeerTests.notify(
                    for: subscribe, tag: "srv", state: "terminated;reason=timeout", port: port)
                peer.send(final, to: from)
                guard let (answer, _) = SIPSubscriptionPeerTests.nextRequest(peer) else { return log }
                log.append("notify-answer \(answer.status ?? 0)")
                peer.send(end.makeResponse(status: 200, reason: "OK").serialized(), to: from)
                return log
            }
        }
        let path = loopbackPath()
        try await agent.subscribe(SIPSubscriptionPeerTests.target, service: service, path: path)
        try await agent.unsubscribe(service: service, path: path)
        #expect(await script.value == ["unsubscribe expires=0", "notify-answer 200"])
        #expect(await agent.subscriptionStatus(service).state == .unsubscribed)
        #expect(losses.all.isEmpty, "asked to resubscribe: \(losses.all)")
        await agent.close()
    }
}
