import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// An account registered at a loopback Kamailio over one transport, for far ends (sipp) that
/// call it straight at its Contact: its plugin and agent, a recorder of its call events, and
/// the Contact's host and port (sipp's remote host).
struct ContactCallFixture {
    let account: SIPAccount
    let plugin: SIPPlugin
    let agent: SIPUserAgent
    let recorder: SIPCallSIPpTests.Recorder
    let host: String
    let port: Int

    init(_ prefix: String, at kamailio: LabRegistrar, transport: SIPTransportKind = .udp) async throws {
        let user = uniqueUser(prefix)
        account = SIPAccount(
            name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, transport: transport, user: user,
            domain: "127.0.0.1", password: "secret-\(user)", expires: 300)
        plugin = SIPPlugin(accounts: [account], logger: testLogger(user))
        agent = try #require(plugin.agent(for: user))
        recorder = SIPCallSIPpTests.Recorder(agent)
        try await plugin.perform(action(.register, account.registrationService), context: context())
        let contact = try #require(await agent.registrationStatus.contact)
        (host, port) = try #require(ContactProbe.hostPort(of: contact))
    }

    /// sipp's arguments for a call to the Contact (`-s USER HOST:PORT`), after `extra`; over TCP
    /// sipp's `t1`: one connection of its own to the Contact's listener.
    func sippArguments(_ extra: [String] = []) -> [String] {
        let mode = account.transport == .tcp ? ["-t", "t1"] : []
        return mode + extra + ["-s", account.user, "\(host):\(port)"]
    }

    /// The call that rang (reported `alerting`) within `seconds`; nil when none did.
    func rung(within seconds: Double = 15) async -> CallID? {
        await recorder.events(until: { $0.phase == .alerting }, within: seconds).first { $0.phase == .alerting }?.call
    }
}
