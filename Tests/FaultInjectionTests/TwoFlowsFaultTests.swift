import Foundation
import NetworkLab
import Testing

/// RFC 5626 §4.2 with `netres run` against real servers (NetworkLab's ``ClientAndRegistrars``:
/// dnsmasq's NAPTR/SRV records name a primary and then a backup Kamailio, which share the user
/// table but not the location table): "a UA can register multiple flows ... to different edge
/// proxies", so the death of one proxy costs no unreachability. Accounts with `flows: 2` keep
/// reg-id 1 on the primary and reg-id 2 on the backup; one with a single flow is the control.
@Suite(
    .serialized, .needsNamespaces,
    .enabled(
        if: LabRegistrar.isInstalled && LabDNS.isInstalled && LabSIPp.isInstalled,
        "needs kamailio, dnsmasq (dnsmasq-base) and sipp (sip-tester)"),
    .timeLimit(.minutes(2)))
struct TwoFlowsFaultTests {
    static let twoFlows = [("twou1", "udp"), ("twot1", "tcp")]
    static let oneFlow = ("oneu1", "udp")

    /// The accounts' config: outbound with a distinct instance each, `incoming-calls: answer`; a
    /// long flow ping, so the first flow does not move to the backup during the test.
    static func writeConfig(_ lab: ClientAndRegistrars) throws -> String {
        let accounts = twoFlows + [oneFlow]
        var extra: [String: String] = [:]
        for (index, (user, _)) in accounts.enumerated() {
            let flows = user == oneFlow.0 ? 1 : 2
            extra[user] =
                "outbound: { instance-id: \"urn:uuid:00000000-0000-0000-0000-00000000000\(index + 1)\", "
                + "reg-id: 1, flows: \(flows) }, incoming-calls: answer"
        }
        return try lab.writeDaemonConfig(name: "netres-two-flows", accounts: accounts, flowPing: 30, extra: extra)
    }

    @Test func withTwoFlowsACallThroughTheBackupReachesTheAccountWhileThePrimaryIsSilentAndRightAfterItIsKilled()
        async throws
    {
        try await withNetworkLab { network in
            let lab = try await network.addClientAndRegistrars()
            let output = network.directory + "/netres-two-flows.out"
            try await network.spawn(
                in: lab.client, [CallFaultLab.netres, "run", "--config", try Self.writeConfig(lab)], output: output)
            let everyone = Set((Self.twoFlows + [Self.oneFlow]).map(\.0))
            let twoFlowUsers = Set(Self.twoFlows.map(\.0))
            // Every account bound on the primary; the two-flow ones on the backup too (reg-id 2).
            let bound = await eventually(within: .seconds(30)) {
                Set(lab.primary.requests().filter { $0.kind == "REGISTERED" }.map(\.user)) == everyone
                    && Set(lab.backup.requests().filter { $0.kind == "REGISTERED" }.map(\.user)) == twoFlowUsers
            }
            try #require(bound, "not bound on both servers: \(Self.tail(output))")
            let onBackup = try await lab.backup.bindings()
            for user in twoFlowUsers {
                #expect(
                    onBackup.contains { $0.addressOfRecord.hasPrefix(user) },
                    "\(user)'s second flow is not bound at the backup: \(onBackup)")
            }
            #expect(!onBackup.contains { $0.addressOfRecord.hasPrefix(Self.oneFlow.0) })

            // 1. The primary silenced (every packet dropped): nothing tells the client over UDP or
            // TCP, yet calls through the backup are answered, before any new REGISTER.
            let silencedAt = realtime()
            try await lab.silencePrimary()
            for (index, (user, _)) in Self.twoFlows.enumerated() {
                let caller = try await Self.call(user, through: lab, port: 5070 + index * 2)
                let code = await caller.exitCode(within: .seconds(20))
                #expect(code == 0, "\(user) not reached while the primary is silent: \(caller.diagnostics())")
                Self.expectAnsweredBeforeAnyRegister(caller, of: user, at: lab.backup, since: silencedAt)
            }
            try await lab.unsilencePrimary()

            // 2. The primary killed.
            let killedAt = realtime()
            await lab.killPrimary()
            for (index, (user, transport)) in Self.twoFlows.enumerated() {
                let caller = try await Self.call(user, through: lab, port: 5080 + index * 2)
                let code = await caller.exitCode(within: .seconds(20))
                #expect(
                    code == 0, "\(user) not reached through the backup: \(caller.diagnostics()) \(Self.tail(output))")
                // Unreachable time 0: over UDP nothing tells the client of the kill (its next flow
                // ping is up to 30 s away), yet the call was answered before any new REGISTER. (A
                // TCP first flow is reset by the kill and registers on the backup within
                // milliseconds anyway: there the second flow only has to carry the call.)
                guard transport == "udp" else { continue }
                Self.expectAnsweredBeforeAnyRegister(caller, of: user, at: lab.backup, since: killedAt)
            }
            // The control: one flow, bound on the dead primary only, is not found at the backup.
            let control = try await Self.call(Self.oneFlow.0, through: lab, port: 5090)
            _ = await control.exitCode(within: .seconds(20))
            #expect(
                control.messages().contains { !$0.sent && $0.status == 404 },
                "the one-flow account was reachable through the backup: \(control.diagnostics())")
        }
    }

    /// Unreachable time 0: `caller` got its 200 before `user` sent any REGISTER to `registrar`
    /// after `instant` (the fault).
    static func expectAnsweredBeforeAnyRegister(
        _ caller: LabSIPp, of user: String, at registrar: LabRegistrar, since instant: Double
    ) {
        let answeredAt = caller.messages().first { !$0.sent && $0.status == 200 }?.at ?? .infinity
        let registeredAgain = registrar.requests().first {
            $0.kind == "REGISTER" && $0.user == user && $0.at > instant
        }
        #expect(
            registeredAgain.map { answeredAt < $0.at } ?? true, "\(user) registered again before the call was answered")
    }

    /// sipp on the backup's own address (not challenged there) calling `user` through it.
    static func call(_ user: String, through lab: ClientAndRegistrars, port: Int) async throws -> LabSIPp {
        try await lab.lab.startSIPp(
            in: lab.server, scenario: "\(CallFaultLab.scenarios)/uac-answered.xml", address: LabAddress.backup4,
            port: port, mediaPort: 16_200 + port, remote: "\(LabAddress.backup4):5060", arguments: ["-s", user])
    }

    static func tail(_ path: String) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(1500))
    }
}
