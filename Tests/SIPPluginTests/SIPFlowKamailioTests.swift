import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Flows against a real Kamailio: flow pings it answers, and a registrar that stops and comes
/// back on the same port.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SIPFlowKamailioTests {
    func makePlugin(
        port: Int, user: String, transport: SIPTransportKind, subscriptions: [SubscriptionTarget] = [],
        publishesPresence: Bool = false
    ) -> (SIPPlugin, SIPAccount) {
        let account = SIPAccount(
            name: user, registrarHost: "127.0.0.1", registrarPort: port, transport: transport, user: user,
            domain: "127.0.0.1", password: "secret-\(user)", expires: 300, subscriptions: subscriptions,
            publishesPresence: publishesPresence)
        let timers = SIPTimers(pongTimeout: .seconds(2))
        return (SIPPlugin(accounts: [account], timers: timers, logger: testLogger(user)), account)
    }

    @Test func udpOptionsFlowPingIsAnsweredByTheRegistrar() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("optping")
            let (plugin, account) = makePlugin(port: kamailio.port, user: user, transport: .udp)
            try await plugin.perform(action(.register, account.registrationService), context: context())
            try await plugin.perform(action(.pingFlow, account.registrationService), context: context())
            #expect(kamailio.transactionCount(of: "OPTIONS", from: user) == 1)
            #expect(await plugin.agent(for: user)!.boundAddress == "127.0.0.1")
            #expect(await plugin.agent(for: user)!.registrationStatus.flowPingInterval == .seconds(30))
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func registrarStoppedOverTCPIsOneLossOfEverythingEstablishedThenRegistersAgain() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("restart")
            let (plugin, account) = makePlugin(
                port: kamailio.port, user: user, transport: .tcp, subscriptions: [SubscriptionTarget(package: .reg)],
                publishesPresence: true)
            let reg = account.subscriptions[0].service(of: account)
            let agent = try #require(plugin.agent(for: user))
            try await plugin.perform(action(.register, account.registrationService), context: context())
            try await plugin.perform(action(.subscribe, reg), context: context())
            try await plugin.perform(action(.publishPresence, account.presencePublishService), context: context())
            #expect(await agent.publicationETag != nil)

            await kamailio.stop()
            #expect(await firstLoss(of: plugin) == [account.registrationService, reg, account.presencePublishService])
            #expect(await agent.boundAddress == nil)

            // The same port, no bindings: a restarted registrar.
            try await kamailio.start()
            try await plugin.perform(action(.register, account.registrationService), context: context())
            let contact = try #require(await agent.registrationStatus.contact)
            #expect(try await kamailio.contacts().contains(contact))
            await agent.close()
        }
    }
}
