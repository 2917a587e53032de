import NetworkLab
import ResilienceTesting
import Testing

/// The example of "Using the SIP plugin with the manager" (SIPPluginArticle.swift), run: the
/// account registers at Kamailio, subscribes, and calls sipp through it.
@Suite(
    .enabled(if: LabRegistrar.isInstalled && SIPpHarness.isInstalled, "Kamailio or sipp missing: SKIPPED"),
    .timeLimit(.minutes(3)))
struct SIPPluginArticleTests {
    @Test func theArticlesPhoneRegistersSubscribesAndCallsThroughKamailio() async throws {
        let sipp = try await SIPpHarness.start(scenario: "uas-answer-bye")
        defer { sipp.stop() }
        try await withLoopbackRegistrar { kamailio in
            try await runPhone(
                network: ScriptedNetworkSource(path: loopbackPath()), registrar: "127.0.0.1", port: kamailio.port,
                callee: "sip:far@127.0.0.1:\(sipp.port)")
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp saw the call and its BYE: \(sipp.errors.suffix(800))")
            #expect(kamailio.transactionCount(of: "REGISTER", from: "alice") >= 2, "challenged, then accepted")
            #expect(kamailio.transactionCount(of: "SUBSCRIBE", from: "alice") >= 1)
        }
    }
}
