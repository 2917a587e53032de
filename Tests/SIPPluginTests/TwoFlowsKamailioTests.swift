import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// RFC 5626 §4.2's second flow against two real Kamailios on loopback, found through SRV records
/// (a zone in memory, as `RegistrarFailoverKamailioTests`): where it goes, when it moves, and
/// that unregistering removes it.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct TwoFlowsKamailioTests {
    static func agent(_ user: String, primary: LabRegistrar, backup: LabRegistrar) -> SIPUserAgent {
        var account = SIPAccount(
            name: user, registrarHost: "lab.test", transport: .udp, user: user, domain: "lab.test",
            password: "secret-\(user)", expires: 300, instanceID: "urn:uuid:00000000-0000-0000-0000-000000000042",
            regID: 1)
        account.outboundFlows = 2
        let zone = RegistrarFailoverKamailioTests.zone(primary: primary.port, backup: backup.port)
        return SIPUserAgent(
            account: account, timers: SIPTimers(), logger: testLogger(user), clock: ContinuousClock(),
            pacer: RegistrarPacer(settings: .init()), callSurvivalBudget: .seconds(30), flows: nil,
            directory: RegistrarDirectory(logger: testLogger(user), check: .allowingLoopback, lookup: zone.lookup),
            onFlowLost: { _ in },
            onFlowActive: { _ in })
    }

    static func holds(_ registrar: LabRegistrar, _ user: String) async -> Bool {
        ((try? await registrar.bindings()) ?? []).contains { $0.contact.contains(user) }
    }

    /// RFC 5626 §4.2: "a UA can register multiple flows ... to different edge proxies"; §7: the
    /// UA removes a flow's registration as any other binding.
    @Test func theSecondFlowIsBoundOnTheNextServerAndUnregisteringRemovesBothBindings() async throws {
        try await withLoopbackRegistrar { primary in
            try await withLoopbackRegistrar { backup in
                let user = uniqueUser("twoflow")
                let agent = Self.agent(user, primary: primary, backup: backup)
                try await agent.register(path: loopbackPath())
                #expect(await Self.holds(primary, user))
                // The second flow registers beside the first (not in its way).
                let second = await eventually(within: .seconds(10)) { await Self.holds(backup, user) }
                #expect(second, "no binding at the backup")
                // A refresh of both: each server's nonce is kept for its own flow, so neither
                // challenges again (one REGISTER each, not a 401 and a second REGISTER).
                let refreshedAt = realtime()
                try await agent.register(path: loopbackPath())
                _ = await eventually(within: .seconds(10)) {
                    backup.requests().contains { $0.kind == "REGISTERED" && $0.user == user && $0.at > refreshedAt }
                }
                for server in [primary, backup] {
                    let registers = server.requests().filter {
                        $0.kind == "REGISTER" && $0.user == user && $0.at > refreshedAt
                    }
                    #expect(registers.count == 1, "\(registers.count) REGISTERs for one refresh")
                }
                let first = try #require(await agent.registrationStatus.contact)
                let other = try #require(await agent.secondFlowContact)
                #expect(first != other, "both flows share one Contact")
                try await agent.unregister(path: loopbackPath())
                #expect(!(await Self.holds(primary, user)))
                #expect(!(await Self.holds(backup, user)))
                await agent.close()
            }
        }
    }

    /// The primary dies and the first flow moves onto the backup, where the second flow was: the
    /// second moves to the other server (the dead one, so it fails and is dropped), never two
    /// flows of one account on one server.
    @Test func whenTheFirstFlowMovesOntoTheSecondsServerTheSecondLeavesIt() async throws {
        try await withLoopbackRegistrar { primary in
            try await withLoopbackRegistrar { backup in
                let user = uniqueUser("twomove")
                let agent = Self.agent(user, primary: primary, backup: backup)
                try await agent.register(path: loopbackPath())
                let bound = await eventually(within: .seconds(10)) { await agent.secondFlowContact != nil }
                try #require(bound, "the second flow did not bind")
                await primary.crash()
                try await agent.register(path: loopbackPath())
                #expect(await Self.holds(backup, user), "the first flow did not move to the backup")
                let dropped = await eventually(within: .seconds(10)) { await agent.secondFlowContact == nil }
                #expect(dropped, "the second flow stayed on the first flow's server")
                await agent.close()
            }
        }
    }
}
