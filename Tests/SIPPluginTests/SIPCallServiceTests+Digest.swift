import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

extension SIPCallServiceTests {
    /// The registrar challenges REGISTER (401) and the INVITE (407) with different nonces. The
    /// INVITE's challenge must not replace the registration's digest state: the REGISTER after
    /// the call answers the registrar's own nonce (nonce count 2) and is accepted at once, so
    /// the registrar sees 3 REGISTERs (challenged, accepted, refreshed), not a fourth after a
    /// second 401 to credentials for the wrong challenge.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func theInvitesChallengeLeavesTheRegistrationsDigestStateAlone() async throws {
        try await withProxiedCall("uas-answer-bye") { kamailio, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            #expect(await agent.auth?.isProxy == false, "REGISTER's state is the registrar's 401")
            #expect(await agent.callAuth?.isProxy == true, "the INVITE's is the proxy's 407")
            #expect(await agent.auth?.nonceCount == 1)
            try await plugin.perform(action(.register, account.registrationService), context: context())
            #expect(await agent.auth?.nonceCount == 2)
            try await agent.hangUp(call, path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(kamailio.transactionCount(of: "REGISTER", from: account.user) == 3)
            // 407, then the INVITE with credentials; the BYE reuses them (no challenge).
            #expect(kamailio.transactionCount(of: "INVITE", from: account.user) == 2)
        }
    }
}
