import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Registration against a real Kamailio on loopback (NetworkLab's `LabRegistrar`).
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SIPRegistrationKamailioTests {
    func withKamailio(_ body: (LabRegistrar) async throws -> Void) async throws {
        try await withLoopbackRegistrar(body)
    }

    func makePlugin(
        _ kamailio: LabRegistrar, user: String, password: String? = nil, transport: SIPTransportKind = .udp,
        expires: Int = 300, host: String = "127.0.0.1", configure: (inout SIPAccount) -> Void = { _ in }
    ) -> (SIPPlugin, SIPAccount) {
        var account = SIPAccount(
            name: user, registrarHost: host, registrarPort: kamailio.port, transport: transport, user: user,
            domain: "127.0.0.1", password: password ?? "secret-\(user)", expires: expires)
        configure(&account)
        return (SIPPlugin(accounts: [account], logger: testLogger(user)), account)
    }

    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func registerRefreshAndUnregisterShowInTheRegistrarsBindings(transport: SIPTransportKind) async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("alice")
            let (plugin, account) = makePlugin(kamailio, user: user, transport: transport)
            let service = account.registrationService
            try await plugin.perform(action(.register, service), context: context())
            let status = await plugin.agent(for: user)!.registrationStatus
            let contact = try #require(status.contact)
            #expect(status.expires == 300)
            #expect(contact.hasPrefix("sip:\(user)@127.0.0.1:"))
            #expect(try await kamailio.contacts().contains(contact))

            try await plugin.perform(action(.refreshRegistration, service), context: context())
            #expect(try await kamailio.contacts() == [contact])
            #expect(kamailio.transactionCount(of: "REGISTER", from: user) == 3)  // 401, 200, refresh 200

            try await plugin.perform(action(.unregister, service), context: context())
            #expect(try await kamailio.contacts().isEmpty)
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func wrongPasswordFailsOnceWithoutAStorm() async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("mallory")
            let (plugin, account) = makePlugin(kamailio, user: user, password: "wrong")
            await #expect {
                try await plugin.perform(action(.register, account.registrationService), context: context())
            } throws: { error in
                (error as? PluginError)?.isRetryable == false
            }
            try await Task.sleep(for: .seconds(1))
            #expect(kamailio.transactionCount(of: "REGISTER", from: user) == 2)
            #expect(try await kamailio.contacts().isEmpty)
            await plugin.agent(for: user)!.close()
        }
    }

    /// With or without a `close-stale-transports` first: `register` itself rebuilds a flow
    /// whose address left the path.
    @Test(arguments: [true, false])
    func addressChangeBindsTheNewContactAndRemovesTheOld(closeStaleFirst: Bool) async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("roamer")
            let (plugin, account) = makePlugin(kamailio, user: user)
            let agent = plugin.agent(for: user)!
            try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.1"))
            let old = try #require(await agent.registrationStatus.contact)
            #expect(try await kamailio.contacts() == [old])

            let moved = context("127.0.0.2")
            if closeStaleFirst {
                try await plugin.perform(action(.closeStaleTransports, account.registrationService), context: moved)
                #expect(await agent.boundAddress == nil)
            }
            try await plugin.perform(action(.register, account.registrationService), context: moved)
            try await plugin.perform(action(.unregisterOldContact, account.registrationService), context: moved)
            let new = try #require(await agent.registrationStatus.contact)
            #expect(new.hasPrefix("sip:\(user)@127.0.0.2:"))
            #expect(await agent.boundAddress == "127.0.0.2")
            #expect(try await kamailio.contacts() == [new])
            await agent.close()
        }
    }

    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func registrarRestartFailsRetryablyThenRegistersAgain(transport: SIPTransportKind) async throws {
        try await withLoopbackRegistrar { registrar in
            let user = uniqueUser("phoenix")
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: registrar.port, transport: transport, user: user,
                domain: "127.0.0.1", password: "secret-\(user)", expires: 300)
            let plugin = SIPPlugin(
                accounts: [account], timers: SIPTimers(t1: .milliseconds(20), t2: .milliseconds(200)),
                logger: testLogger(user))
            try await plugin.perform(action(.register, account.registrationService), context: context())
            await registrar.stop()
            await #expect {
                try await plugin.perform(action(.register, account.registrationService), context: context())
            } throws: { error in
                (error as? PluginError)?.isRetryable == true
            }
            // The same port, no bindings: a restarted registrar (its request log goes on).
            let restartAt = realtime()
            try await registrar.start()
            try await plugin.perform(action(.register, account.registrationService), context: context())
            let contact = try #require(await plugin.agent(for: user)!.registrationStatus.contact)
            #expect(try await registrar.contacts() == [contact])
            #expect(registrar.transactionCount(of: "REGISTER", from: user, since: restartAt) == 2)  // 401, then 200
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func sha256DigestRegistersAndAWrongPasswordStillFailsOnce() async throws {
        try await withLoopbackRegistrar(options: RegistrarOptions(digestAlgorithm: "SHA-256")) { kamailio in
            let user = uniqueUser("sha")
            let (plugin, account) = makePlugin(kamailio, user: user)
            try await plugin.perform(action(.register, account.registrationService), context: context())
            #expect(try await kamailio.contacts().count == 1)
            #expect(await plugin.agent(for: user)!.auth?.challenge.algorithm == .sha256)
            let intruder = uniqueUser("shabad")
            let (badPlugin, badAccount) = makePlugin(kamailio, user: intruder, password: "wrong")
            await #expect(throws: PluginError.self) {
                try await badPlugin.perform(action(.register, badAccount.registrationService), context: context())
            }
            #expect(kamailio.transactionCount(of: "REGISTER", from: intruder) == 2)
            await plugin.agent(for: user)!.close()
            await badPlugin.agent(for: intruder)!.close()
        }
    }

    @Test func serviceUnavailableCarriesRetryAfter() async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("busy")
            let (plugin, account) = makePlugin(kamailio, user: user)
            await #expect {
                try await plugin.perform(action(.register, account.registrationService), context: context())
            } throws: { error in
                guard let error = error as? PluginError else { return false }
                return error.isRetryable && error.retryAfter == .seconds(3)
            }
            #expect(kamailio.transactionCount(of: "REGISTER", from: user) == 1)
            // Never bound: unregistering sends nothing (it would only be refused again).
            try await plugin.perform(action(.unregister, account.registrationService), context: context())
            #expect(kamailio.transactionCount(of: "REGISTER", from: user) == 1)
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func intervalTooBriefRaisesTheExpiryToMinExpires() async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("brief")
            let (plugin, account) = makePlugin(kamailio, user: user, expires: 60)
            try await plugin.perform(action(.register, account.registrationService), context: context())
            #expect(await plugin.agent(for: user)!.registrationStatus.expires == 120)
            #expect(try await kamailio.contacts().count == 1)
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func outboundAndPushParametersReachTheBinding() async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("pushy")
            let instance = "urn:uuid:00000000-0000-4000-8000-00000000abcd"
            let (plugin, account) = makePlugin(kamailio, user: user) { account in
                account.instanceID = instance
                account.regID = 1
                account.push = PushParameters(provider: "apns", prid: "tok123", param: "team.app.voip")
            }
            try await plugin.perform(action(.register, account.registrationService), context: context())
            let dump = try await kamailio.kamcmd(["ul.dump"])
            #expect(dump.contains("pn-provider=apns;pn-prid=tok123;pn-param=team.app.voip"))
            #expect(dump.contains("Instance: <\(instance)>"))
            #expect(dump.contains("Reg-Id: 1"))
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func tcpFlowPingIsAnsweredWithAPong() async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("pinger")
            let (plugin, account) = makePlugin(kamailio, user: user, transport: .tcp)
            try await plugin.perform(action(.register, account.registrationService), context: context())
            try await plugin.perform(action(.pingFlow, account.registrationService), context: context())
            #expect(await plugin.agent(for: user)!.boundAddress == "127.0.0.1")
            await plugin.agent(for: user)!.close()
        }
    }

    @Test func pushTokenChangeRebindsWithTheNewTokenOnly() async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("token")
            let (plugin, account) = makePlugin(kamailio, user: user)
            let agent = plugin.agent(for: user)!
            #expect(await agent.isPushAvailable == false)
            await agent.setPushParameters(PushParameters(provider: "fcm", prid: "first-token"))
            try await plugin.perform(action(.register, account.registrationService), context: context())
            #expect(try await kamailio.contacts().map { $0.contains("pn-prid=first-token") } == [true])
            await agent.setPushParameters(PushParameters(provider: "fcm", prid: "second-token"))
            try await plugin.perform(action(.register, account.registrationService), context: context())
            #expect(try await kamailio.contacts().map { $0.contains("pn-prid=second-token") } == [true])
            #expect(await agent.isPushAvailable)
            await agent.close()
        }
    }

    @Test(
        .enabled(if: LoopbackPort.hasIPv6, "no IPv6 loopback here"),
        arguments: [SIPTransportKind.udp, .tcp])
    func ipv6FlowRegisters(transport: SIPTransportKind) async throws {
        try await withKamailio { kamailio in
            let user = uniqueUser("six")
            let (plugin, account) = makePlugin(kamailio, user: user, transport: transport, host: "::1")
            try await plugin.perform(action(.register, account.registrationService), context: context("::1"))
            let contact = try #require(await plugin.agent(for: user)!.registrationStatus.contact)
            #expect(contact.hasPrefix("sip:\(user)@[::1]:"))
            #expect(try await kamailio.contacts() == [contact])
            await plugin.agent(for: user)!.close()
        }
    }
}

@Suite struct KamailioAvailabilityTests {
    @Test func kamailioIsInstalledWhenRunningInCI() {
        if !LabRegistrar.isInstalled {
            print("⚠️⚠️⚠️ kamailio/kamcmd not installed: the Kamailio integration suite was SKIPPED ⚠️⚠️⚠️")
        }
        #expect(
            LabRegistrar.isInstalled || !(ProcessInfo.processInfo.environment["CI"] == "true"),
            "CI=true but kamailio is not installed")
    }
}
