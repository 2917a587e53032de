import Logging
import ResilienceCore
import Testing

@testable import SIPPlugin

struct SIPPluginTests {
    static let account = SIPAccount(
        name: "alice", registrarHost: "127.0.0.1", user: "alice", domain: "example.org", password: "hunter2",
        subscriptions: [
            SubscriptionTarget(package: .reg),
            SubscriptionTarget(package: .presenceOthers, resource: "sip:bob@example.org"),
        ],
        publishesPresence: true)

    @Test func servicesAndRoutesFollowTheAccounts() {
        let plugin = SIPPlugin(accounts: [Self.account], logger: testLogger("plugin"))
        let ids = plugin.services.map(\.id.rawValue)
        #expect(
            ids == [
                "alice.registration", "alice.subscription.reg",
                "alice.subscription.presence-others.sip:bob@example.org",
                "alice.presence-publish",
            ])
        #expect(ids.allSatisfy { plugin.performs(.unregisterOldContact, for: ServiceID($0)) })
        #expect(!plugin.performs(.register, for: "bob.registration"))
        #expect(!plugin.performs(.drainHTTP, for: ServiceID(ids[0])))
        // One flow ping per flow: on the registration only, the UDP default here.
        #expect(plugin.services.map(\.flowPingInterval) == [.seconds(30), nil, nil, nil])
    }

    @Test func unknownServicesAndMismatchedActionsArePermanentFailures() async {
        let plugin = SIPPlugin(accounts: [Self.account], logger: testLogger("plugin"))
        for (kind, service) in [
            (ActionKind.register, ServiceID("bob.registration")), (.subscribe, "alice.registration"),
            (.register, "alice.subscription.reg"), (.holdCall, "alice.presence-publish"),
        ] {
            await #expect {
                try await plugin.perform(action(kind, service), context: context())
            } throws: { error in
                (error as? PluginError)?.isRetryable == false
            }
        }
    }

    @Test func passwordsNeverAppearInDescriptions() {
        #expect(!Self.account.description.contains("hunter2"))
        #expect(!"\(Self.account)".contains("hunter2"))
    }

    @Test func noAddressOfTheRegistrarsFamilyIsARetryableFailure() async {
        let plugin = SIPPlugin(accounts: [Self.account], logger: testLogger("plugin"))
        await #expect {
            try await plugin.perform(action(.register, "alice.registration"), context: context("::1"))
        } throws: { error in
            (error as? PluginError)?.isRetryable == true
        }
    }
}
