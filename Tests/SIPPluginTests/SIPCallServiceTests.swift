import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Calls as services of the SIP plugin, against sipp: the reports the manager gets and the
/// policy's `hold-call`, `resume-call` and `reinvite-call` performed on them.
@Suite(
    .serialized,
    .enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SIPCallServiceTests {
    func plugin(for sipp: SIPpHarness) -> (SIPPlugin, SIPAccount) {
        let user = uniqueUser("caller")
        let account = sipp.account(user: user)
        return (SIPPlugin(accounts: [account], logger: testLogger(user)), account)
    }

    /// The plugin's service reports until (and with) the first that matches `last`; hang guard
    /// 10 s. Flow activity (a response on the account's flow) says nothing about calls: skipped.
    func reports(of plugin: SIPPlugin, until last: @escaping @Sendable (PluginReport) -> Bool) -> Task<
        [PluginReport], Never
    > {
        let reader = Task {
            var seen: [PluginReport] = []
            for await report in plugin.reports {
                if case .flowActive = report { continue }
                seen.append(report)
                if last(report) { break }
            }
            return seen
        }
        Task {
            try? await Task.sleep(for: .seconds(10))
            reader.cancel()
        }
        return reader
    }

    static func kind(_ report: PluginReport) -> ServiceKind? {
        switch report {
        case .serviceAdded(let service), .serviceChanged(let service): service.kind
        default: nil
        }
    }

    @Test func theInterruptionsHoldAndResumeLeaveAUserHoldAlone() async throws {
        let sipp = try await SIPpHarness.start(scenario: "uas-hold-resume")
        defer { sipp.stop() }
        let (plugin, account) = plugin(for: sipp)
        let seen = reports(of: plugin) { if case .serviceRemoved = $0 { true } else { false } }
        let agent = try #require(plugin.agent(for: account.name))
        let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
        let service = account.callService(call)
        #expect(plugin.performs(.holdCall, for: service))

        try await plugin.perform(action(.holdCall, service), context: context())  // re-INVITE sendonly
        try await agent.hold(call, reason: .user, path: loopbackPath())  // already held: nothing sent
        try await plugin.perform(action(.resumeCall, service), context: context())  // the user still holds
        #expect(await agent.activeCalls[call] == .held)
        try await agent.resume(call, reason: .user, path: loopbackPath())  // re-INVITE sendrecv
        try await agent.hangUp(call, path: loopbackPath())

        #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
        let reports = await seen.value
        #expect(
            reports.map(Self.kind) == [
                .call(.outgoing, .progressing), .call(.outgoing, .active), .call(.outgoing, .held),
                .call(.outgoing, .active), nil,
            ])
        if case .serviceAdded(let added) = reports.first {
            #expect(added.id == service && added.account == account.name)
        }
        #expect(reports.last == .serviceRemoved(service))
        #expect(!plugin.performs(.holdCall, for: service), "the ended call's route is gone")
        await agent.close()
    }

    /// A registered account of a plugin whose flow goes through the test registrar (Kamailio
    /// record-routes and relays the INVITE to sipp), and a far end running `scenario`.
    func withProxiedCall(
        _ scenario: String, calls: Int = 1,
        _ body: (LabRegistrar, SIPpHarness, SIPPlugin, SIPAccount) async throws -> Void
    ) async throws {
        try await withLoopbackRegistrar { kamailio in
            let sipp = try await SIPpHarness.start(scenario: scenario, calls: calls)
            defer { sipp.stop() }
            let user = uniqueUser("mover")
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, user: user, domain: "127.0.0.1",
                password: "secret-\(user)")
            let plugin = SIPPlugin(accounts: [account], logger: testLogger(user))
            try await plugin.perform(action(.register, account.registrationService), context: context())
            try await body(kamailio, sipp, plugin, account)
            await plugin.agent(for: user)?.close()
        }
    }

    /// The call is placed from 127.0.0.1; the address "changes" to 127.0.0.2 (a second loopback
    /// address); the registration moves first, then `reinvite-call` re-INVITEs with the new
    /// Contact and `c=` (sipp checks both), and the media session rebinds there.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func reinviteCallAfterAnAddressChangeCarriesTheNewContactAndSDP() async throws {
        try await withProxiedCall("uas-reinvite") { kamailio, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let media = RTPEchoSession()
            let call = try await agent.placeCall(
                to: "sip:far@127.0.0.1:\(sipp.port)", media: media, path: loopbackPath())
            #expect(await media.localAddress == "127.0.0.1")

            // The executor's order: the account's registration, then its calls.
            try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.2"))
            try await plugin.perform(action(.reinviteCall, account.callService(call)), context: context("127.0.0.2"))
            #expect(await media.localAddress == "127.0.0.2", "media rebound to the new address")
            #expect(await agent.activeCalls[call] == .active)
            #expect(try await kamailio.contacts().allSatisfy { $0.contains("@127.0.0.2:") })
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            // The registrar challenged the first INVITE (407), then relayed it with credentials
            // and the re-INVITE (its log is the witness: three INVITE CSeqs).
            #expect(kamailio.transactionCount(of: "INVITE", from: account.user) == 3)
        }
    }

    /// A call the user held, also held by an interruption, when the path comes back at a new
    /// address: the policy plans `resume-call` (which covers `reinvite-call`); the user still
    /// holds it, so it is re-offered as held (sendonly) from the new address, not resumed.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func aUserHeldCallMovesHeldWhenTheInterruptionsResumeCoversTheReinvite() async throws {
        try await withProxiedCall("uas-held-move") { kamailio, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            try await agent.hold(call, reason: .user, path: loopbackPath())
            try await plugin.perform(action(.holdCall, account.callService(call)), context: context())
            try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.2"))
            try await plugin.perform(action(.resumeCall, account.callService(call)), context: context("127.0.0.2"))
            #expect(await agent.activeCalls[call] == .held)
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            // 407 + INVITE with credentials, hold, the held re-offer from the new address.
            #expect(kamailio.transactionCount(of: "INVITE", from: account.user) == 4)
        }
    }
}
