import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Failover between two real Kamailios on loopback, found through SRV records (a zone in memory:
/// the DNS path itself runs against dnsmasq in `RegistrarFailoverFaultTests`).
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct RegistrarFailoverKamailioTests {
    /// `_sip._udp` and `_sip._tcp` of `lab.test`: `primary` (priority 10) then `backup` (20).
    static func zone(primary: Int, backup: Int) -> SIPServerLocatorTests.Zone {
        var records: [DNSRecord] = []
        for prefix in ["_sip._udp.lab.test", "_sip._tcp.lab.test"] {
            records.append(
                DNSRecord(
                    name: prefix, ttl: 60,
                    data: .srv(priority: 10, weight: 0, port: UInt16(primary), target: "primary.lab.test")))
            records.append(
                DNSRecord(
                    name: prefix, ttl: 60,
                    data: .srv(priority: 20, weight: 0, port: UInt16(backup), target: "backup.lab.test"))
            )
        }
        records.append(DNSRecord(name: "primary.lab.test", ttl: 60, data: .a("127.0.0.1")))
        records.append(DNSRecord(name: "backup.lab.test", ttl: 60, data: .a("127.0.0.1")))
        return SIPServerLocatorTests.Zone(records)
    }

    static func agent(_ user: String, transport: SIPTransportKind, zone: SIPServerLocatorTests.Zone) -> SIPUserAgent {
        let account = SIPAccount(
            name: user, registrarHost: "lab.test", transport: transport, user: user, domain: "lab.test",
            password: "secret-\(user)", expires: 300)
        return SIPUserAgent(
            account: account, timers: SIPTimers(), logger: testLogger(user), clock: ContinuousClock(),
            pacer: RegistrarPacer(settings: .init()), callSurvivalBudget: .seconds(30), flows: nil,
            directory: RegistrarDirectory(logger: testLogger(user), check: .allowingLoopback, lookup: zone.lookup),
            onFlowLost: { _ in },
            onFlowActive: { _ in })
    }

    /// RFC 3263 §4.3: "For SIP requests, failure occurs if the transaction layer reports a 503
    /// error response or a transport failure of some sort ... If a failure occurs, the client
    /// SHOULD create a new request ... That request is sent to the next element in the list as
    /// specified by RFC 2782."
    @Test func a503WithoutRetryAfterSendsTheRegisterToTheNextServerAtOnce() async throws {
        try await withLoopbackRegistrar { primary in
            try await withLoopbackRegistrar { backup in
                let user = uniqueUser("fail503")
                let agent = Self.agent(
                    user, transport: .udp, zone: Self.zone(primary: primary.port, backup: backup.port))
                try await primary.inject(.serviceUnavailable(retryAfter: 0, count: 10))
                // One `register` call that does not throw: the move happened inside it, with no
                // failure reported to the executor, so no backoff came before the alternative.
                try await agent.register(path: loopbackPath())
                #expect(try await backup.bindings().contains { $0.contact.contains(user) })
                #expect(primary.requests().contains { $0.kind == "FAULT503" && $0.user == user })
                #expect(!primary.requests().contains { $0.kind == "REGISTERED" && $0.user == user })
                await agent.close()
            }
        }
    }

    /// A refused connection is "a transport failure" too (RFC 3263 §4.3).
    @Test func aRefusedConnectionSendsTheRegisterToTheNextServerAtOnce() async throws {
        try await withLoopbackRegistrar { backup in
            let user = uniqueUser("failtcp")
            let closedPort = try LoopbackPort.free()
            let agent = Self.agent(user, transport: .tcp, zone: Self.zone(primary: closedPort, backup: backup.port))
            try await agent.register(path: loopbackPath())
            #expect(try await backup.bindings().contains { $0.contact.contains(user) })
            await agent.close()
        }
    }

    /// With a 503 from every server, the last error is thrown (the executor's backoff applies) and
    /// the next attempt starts at the preferred server again.
    @Test func whenEveryServerFailsTheNextAttemptStartsAtThePreferredOne() async throws {
        try await withLoopbackRegistrar { primary in
            try await withLoopbackRegistrar { backup in
                let user = uniqueUser("failall")
                let agent = Self.agent(
                    user, transport: .udp, zone: Self.zone(primary: primary.port, backup: backup.port))
                try await primary.inject(.serviceUnavailable(retryAfter: 0, count: 1))
                try await backup.inject(.serviceUnavailable(retryAfter: 0, count: 1))
                await #expect(throws: PluginError.self) { try await agent.register(path: loopbackPath()) }
                try await agent.register(path: loopbackPath())
                #expect(try await primary.bindings().contains { $0.contact.contains(user) })
                #expect(try await backup.bindings().isEmpty)
                await agent.close()
            }
        }
    }
}
