import Foundation
import Testing

/// `netres run` against a registrar that refuses service (503 with Retry-After) or restarts,
/// asserted through the registrar's script log, `ul.dump` and netres's JSON action log.
@Suite(.serialized, .needsNamespaces, .enabled(if: RegistrarLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(1)))
struct SIPRegistrarFaultTests {
    /// The arrival instants of `user`'s REGISTER transactions (first arrival per CSeq), in order.
    func registerAttempts(_ lab: RegistrarLab, user: String) -> [Double] {
        var firstArrival: [String: Double] = [:]
        for line in lab.lines("REGISTER", user: user) where firstArrival[line.fields["cseq"] ?? ""] == nil {
            firstArrival[line.fields["cseq"] ?? ""] = line.at
        }
        return firstArrival.values.sorted()
    }

    @Test func aBusyRegistrarsRetryAfterSpacesTheAttemptsAndEachFailureIsLogged() async throws {
        // The template answers users busy* with 503 and Retry-After: 3; the backoff alone would
        // retry after about 1 s, then 1.6 s.
        let user = "busy1"
        let lab = try await RegistrarLab.running()
        defer { lab.stop() }
        try lab.startClient(user: user, config: try lab.writeDaemonConfig(user: user))
        try #require(await waitUntil(seconds: 12) { registerAttempts(lab, user: user).count >= 3 })
        try await Task.sleep(for: .seconds(1))
        let attempts = registerAttempts(lab, user: user)
        let window = realtime() - attempts[0]
        let gaps = zip(attempts.dropFirst(), attempts).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 2.7 }, "REGISTER gaps \(gaps) s: Retry-After 3 not honoured")
        #expect(attempts.count <= Int(window / 2.7) + 1, "\(attempts.count) REGISTERs in \(window) s")
        let failures = lab.actionLog(of: user).filter {
            // At start the registration is brought up by register or refresh-registration,
            // depending on the policy's start-up trigger.
            $0.service == "\(user).registration" && $0.outcome == "retrying"
        }
        #expect(failures.count >= 2, "netres logged \(failures.count) retrying registers")
        #expect(failures.allSatisfy { $0.error?.contains("503") == true }, "errors: \(failures.map(\.error))")
    }

    @Test func aRestartedRegistrarHasLostItsBindings() async throws {
        let lab = try await RegistrarLab.registered("amnesia")
        defer { lab.stop() }
        #expect(try await lab.boundContacts().contains { $0.contains("amnesia@198.18.0.2") })
        try await lab.restartRegistrar()
        // Nothing makes a UDP client without flow pings register again this soon (expires 600 s).
        #expect(try await lab.boundContacts().isEmpty)
    }

    /// The registrar is stopped for ~5 s and started again, with the client's flow to it lost:
    /// netres notices (TCP: the dropped connection; UDP: failed flow pings), retries with
    /// the executor's backoff (1 s, ×1.6, ±20 %) while the registrar is down, a bounded number
    /// of times, and the new registrar binds it within one backoff interval of its start.
    func registersAgainAfterARegistrarRestart(_ user: String, transport: String, account: [String] = [])
        async throws
    {
        let lab = try await RegistrarLab.registered(user, transport: transport, account: account)
        defer { lab.stop() }
        await lab.stopRegistrar()
        try await Task.sleep(for: .seconds(5))
        // Any binding after this instant is the new registrar's: the old one is gone.
        let restartAt = realtime()
        try await lab.startRegistrar()
        let retries = lab.actionLog(of: user).filter {
            $0.service == "\(user).registration" && $0.outcome == "retrying"
        }
        #expect((1...6).contains(retries.count), "retrying registrations while down: \(retries.count)")
        // The next delay is at most 1.2 × 1.6^(n−1) s after the n-th failure; 1 s of slack.
        let nextDelay = 1.2 * pow(1.6, Double(max(retries.count, 1) - 1)) + 1
        let rebound = await waitUntil(seconds: nextDelay) {
            lab.lines("REGISTERED", user: user).contains { $0.at > restartAt }
        }
        #expect(rebound, "not registered again within \(nextDelay) s of the registrar's restart")
    }

    @Test
    func overTCPTheDroppedFlowIsNoticedAndTheRestartedRegistrarBindsTheClientAgain() async throws {
        try await registersAgainAfterARegistrarRestart("tcpflow", transport: "tcp")
    }

    @Test
    func overUDPFlowPingsNoticeTheRestartAndTheRestartedRegistrarBindsTheClientAgain() async throws {
        try await registersAgainAfterARegistrarRestart("udpflow", transport: "udp", account: ["flow-ping: 1s"])
    }
}
