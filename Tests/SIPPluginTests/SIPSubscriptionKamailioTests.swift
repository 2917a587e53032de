import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Subscriptions (reg, presence) and PUBLISH against a real Kamailio presence server.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SIPSubscriptionKamailioTests {
    /// Polls the agent's view of a subscription until `condition` holds (at most 5 s).
    func waitFor(
        _ agent: SIPUserAgent, _ service: ServiceID, _ condition: (SubscriptionStatus) -> Bool
    ) async -> SubscriptionStatus {
        var status = await agent.subscriptionStatus(service)
        _ = await eventually(within: .seconds(5), every: .milliseconds(20)) {
            status = await agent.subscriptionStatus(service)
            return condition(status)
        }
        return status
    }

    @Test func regAndSelfPresenceSubscriptionsReceiveNotifies() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("watcher")
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, user: user, domain: "127.0.0.1",
                password: "secret-\(user)", expires: 300,
                subscriptions: [SubscriptionTarget(package: .reg), SubscriptionTarget(package: .presenceSelf)],
                publishesPresence: true)
            let plugin = SIPPlugin(accounts: [account], logger: testLogger(user))
            let agent = try #require(plugin.agent(for: user))
            let reg = account.subscriptions[0].service(of: account)
            let presence = account.subscriptions[1].service(of: account)

            try await plugin.perform(action(.register, account.registrationService), context: context())
            let contact = try #require(await agent.registrationStatus.contact)
            try await plugin.perform(action(.subscribe, reg), context: context())
            let regStatus = await waitFor(agent, reg) { String(decoding: $0.lastBody, as: UTF8.self).contains(contact) }
            #expect(regStatus.state == .active)
            #expect(String(decoding: regStatus.lastBody, as: UTF8.self).contains(contact))

            plugin.presence = PresenceDocument(isOpen: true, note: "in a meeting")
            try await plugin.perform(action(.publishPresence, account.presencePublishService), context: context())
            #expect(await agent.publicationETag != nil)
            try await plugin.perform(action(.subscribe, presence), context: context())
            let presenceStatus = await waitFor(agent, presence) {
                String(decoding: $0.lastBody, as: UTF8.self).contains("in a meeting")
            }
            #expect(presenceStatus.state == .active)
            #expect(String(decoding: presenceStatus.lastBody, as: UTF8.self).contains("in a meeting"))

            try await plugin.perform(action(.refreshSubscription, reg), context: context())
            #expect(await agent.subscriptionStatus(reg).state == .active)
            try await plugin.perform(action(.unsubscribe, presence), context: context())
            let ended = await waitFor(agent, presence) {
                if case .terminated(let reason, _) = $0.state { return reason != "unsubscribed" }
                return false
            }
            #expect(ended.notifyCount >= 2, "the notifier's final NOTIFY is answered, not rejected")
            try await plugin.perform(action(.unregister, account.presencePublishService), context: context())
            #expect(await agent.publicationETag == nil)
            await agent.close()
        }
    }

    @Test func interleavedActionsOfOneAccountShareOneFlow() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("bee")
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, user: user, domain: "127.0.0.1",
                password: "secret-\(user)", subscriptions: [SubscriptionTarget(package: .messageSummary)])
            let plugin = SIPPlugin(accounts: [account], logger: testLogger(user))
            let subscription = account.subscriptions[0].service(of: account)
            async let registered: Void = plugin.perform(
                action(.register, account.registrationService), context: context())
            async let subscribed: Void = plugin.perform(action(.subscribe, subscription), context: context())
            _ = try await (registered, subscribed)
            // pua_reginfo's own PUBLISH for this user comes from Kamailio's port: leave it out.
            let log = try String(contentsOfFile: kamailio.logPath, encoding: .utf8)
            let sources = Set(
                log.split(separator: "\n").filter { $0.contains("NRTEST") && $0.contains("user=\(user) ") }
                    .compactMap { $0.split(separator: " ").first { $0.hasPrefix("src=") } }
                    .filter { !$0.hasSuffix(":\(kamailio.port)") })
            #expect(sources.count == 1, "requests came from \(sources)")
            await plugin.agent(for: user)!.close()
        }
    }
}
