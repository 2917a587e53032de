import Logging
import ResilienceCore
import Testing

@testable import SIPPlugin

/// The plugin's routes grow and shrink at run time, and the routing question follows them.
struct SIPRouteTableTests {
    static let account = SIPAccount(
        name: "alice", registrarHost: "198.18.0.1", user: "alice", domain: "example.test", password: "pw",
        subscriptions: [SubscriptionTarget(package: .reg)])

    @Test func theConfiguredServicesAreRouted() {
        let table = SIPRouteTable(accounts: [Self.account])
        #expect(table[Self.account.registrationService] == .registration(account: "alice"))
        #expect(table.count == 2)
    }

    @Test func addingTwiceChangesNothingAndRemovingReturnsTheRoute() {
        var table = SIPRouteTable(accounts: [Self.account])
        let target = SubscriptionTarget(package: .presenceOthers, resource: "sip:bob@example.test")
        let service = target.service(of: Self.account)
        let added = table.add(.subscription(account: "alice", target: target), for: service)
        let addedAgain = table.add(.publication(account: "alice"), for: service)
        #expect(added)
        #expect(!addedAgain)
        #expect(table[service] == .subscription(account: "alice", target: target))
        let removed = table.remove(service)
        let removedAgain = table.remove(service)
        #expect(removed == .subscription(account: "alice", target: target))
        #expect(removedAgain == nil)
        #expect(table.count == 2)
    }

    @Test func thePluginRoutesAServiceAddedAtRunTimeAndReportsItsComingAndGoing() async throws {
        let plugin = SIPPlugin(accounts: [Self.account], logger: testLogger("routes"))
        let target = SubscriptionTarget(package: .presenceOthers, resource: "sip:carol@example.test")
        let service = try #require(plugin.addSubscription(target, account: "alice"))
        #expect(plugin.performs(.subscribe, for: service))
        #expect(plugin.addSubscription(target, account: "alice") == nil, "already routed")
        #expect(plugin.addSubscription(target, account: "nobody") == nil)
        #expect(plugin.removeService(service))
        #expect(!plugin.performs(.subscribe, for: service))
        #expect(plugin.performs(.register, for: Self.account.registrationService))
        var reports = plugin.reports.makeAsyncIterator()
        let added = await reports.next()
        let removed = await reports.next()
        #expect(
            added == .serviceAdded(ClientService(id: service, kind: .subscription(.presenceOthers), account: "alice")))
        #expect(removed == .serviceRemoved(service))
        await #expect(throws: PluginError.self) {
            try await plugin.perform(action(.subscribe, service), context: context())
        }
    }
}
