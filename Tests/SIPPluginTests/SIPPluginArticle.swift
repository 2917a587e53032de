// The article "Using the SIP plugin with the manager" (SIPPlugin.docc), compiled here and run by
// SIPPluginArticleTests against Kamailio and sipp; DocumentationTests fails when they differ.
// doc:begin Plugins/SIPPlugin/SIPPlugin.docc/SIPPluginWithTheManager.md
import Logging
import NetResilience
import SIPPlugin
import ServiceLifecycle

/// One account kept registered and subscribed across network loss and change, and a call.
func runPhone(network: some NetworkEventSource, registrar: String, port: Int, callee: String) async throws {
    let logger = Logger(label: "phone")
    let policy = Policy.default
    let alice = SIPAccount(
        name: "alice", registrarHost: registrar, registrarPort: port, transport: .tcp, user: "alice",
        domain: registrar, password: "secret-alice",
        subscriptions: [SubscriptionTarget(package: .reg), SubscriptionTarget(package: .messageSummary)])
    let sip = SIPPlugin(accounts: [alice], logger: logger)
    let manager = ResilienceManager(source: network, policy: policy, plugins: [sip], logger: logger)
    // The registration and one service per subscription: the manager keeps them from now on.
    for service in sip.services { await manager.register(service) }
    let events = manager.events()  // subscribed before the manager runs: nothing is missed
    let group = ServiceGroup(services: [manager], logger: logger)
    let running = Task { try await group.run() }

    // The default policy registers, then subscribes; wait for the registration.
    for await event in events {
        guard let action = event.action, action.action.service == alice.registrationService else { continue }
        if action.outcome == .succeeded { break }
    }
    // A call leaves from the path the manager decided (the plugin never reads netlink).
    let path = await manager.status().path
    let call = try await sip.placeCall(account: "alice", to: callee, path: path)  // returns once answered
    try await sip.hangUp(call, account: "alice", path: path)

    await group.triggerGracefulShutdown()
    try await running.value
}
// doc:end
