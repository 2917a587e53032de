import Foundation
import NetworkLab
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

@testable import SIPPlugin

extension SIPCallServiceTests {
    /// An address change is a burst of netlink changes (IPv4, then IPv6, a few milliseconds
    /// apart), each planning register → reinvite-call. The second batch comes while the first
    /// re-INVITE is out (the executor supersedes it mid-flight): that re-INVITE is still seen to
    /// its end (its 2xx ACKed: sipp takes no BYE before the ACK), and the second recovery is
    /// coalesced into it, so the far end sees exactly one re-INVITE, with the new Contact and
    /// `c=` (sipp fails on a second one), after the registrar confirmed the new binding.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func twoChangesInABurstGiveOneAckedReinviteAfterTheRegister() async throws {
        try await withProxiedCall("uas-reinvite") { kamailio, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            let callID = try #require(await agent.calls[call]?.dialogID.callID)
            let executor = ActionExecutor(plugins: [plugin], path: loopbackPath("127.0.0.2"))
            let events = executor.events()
            let registration = account.registrationService
            let batch = [
                action(.register, registration),
                .fixture(.reinviteCall, for: account.callService(call), after: [registration]),
            ]
            await executor.submit(batch, epoch: .initial)
            // The second change arrives the moment the first re-INVITE starts.
            var outcomes: [ActionOutcome] = []
            for await event in events where event.action.kind == .reinviteCall {
                outcomes.append(event.outcome)
                if event.outcome == .started {
                    await executor.submit(batch, epoch: .initial)
                    break
                }
            }
            for await event in events where event.action.kind == .reinviteCall {
                outcomes.append(event.outcome)
                if event.outcome == .succeeded { break }
                if case .failed = event.outcome { break }
            }
            #expect(outcomes == [.started, .superseded, .started, .succeeded], "\(outcomes)")
            #expect(await agent.activeCalls[call] == .active)
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("INVITE") == 2, "the INVITE and one re-INVITE")
            #expect(sipp.received("ACK") == 2, "both 2xx ACKed")
            let log = kamailio.requests().filter { $0.user == account.user }
            let bound = log.firstIndex { $0.kind == "REGISTERED" && $0.contact.contains("@127.0.0.2:") }
            let invites = log.indices.filter { log[$0].kind == "INVITE" && log[$0].fields["callid"] == callID }
            // The registrar challenges the first INVITE (407): it sees that, the INVITE with
            // credentials and one re-INVITE.
            #expect(kamailio.transactionCount(of: "INVITE", from: account.user) == 3)
            let reinvite = invites.last
            #expect(
                bound != nil && reinvite != nil && bound! < reinvite!,
                "\(log.map { "\($0.kind) \($0.fields["cseq"] ?? "") \($0.contact)" })")
        }
    }
}
