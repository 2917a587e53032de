import Foundation
import NetworkLab
import Testing

/// `netres run` against a registrar that refuses service (503 with Retry-After) or restarts,
/// asserted through the registrar's request log, `ul.dump` and netres's JSON action log.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct SIPRegistrarFaultTests {
    /// The arrival instants of `user`'s REGISTER transactions (first arrival per CSeq), in order.
    func registerAttempts(_ lab: DaemonLab, user: String) -> [Double] {
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
        try await DaemonLab.with { lab in
            try await lab.startClient(user: user, config: try lab.writeDaemonConfig(user: user))
            try #require(await eventually(within: .seconds(12)) { registerAttempts(lab, user: user).count >= 3 })
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
    }

    /// A 503 with `Retry-After: 9223372036854775807` trapped the daemon about a second later
    /// (a crash loop under `Restart=on-failure`). Now the process lives on, answers `ctl`, and
    /// does not retry before its backoff (the cap itself is checked in DaemonHostileRegistrarTests).
    @Test func aRetryAfterOfInt64MaxLeavesTheDaemonAlive() async throws {
        let user = "hostile1"
        try await DaemonLab.with { lab in
            let pid = try await lab.startClient(user: user, config: try lab.writeDaemonConfig(user: user))
            try #require(await eventually(within: .seconds(10)) { !registerAttempts(lab, user: user).isEmpty })
            let failed = await eventually(within: .seconds(5)) {
                lab.actionLog(of: user).contains { $0.outcome == "retrying" }
            }
            try await Task.sleep(for: .seconds(3))
            let status = await lab.lab.exitStatus(of: pid)
            #expect(status == nil, "netres exited (wait status \(status ?? 0)) after the 503")
            let reply = try await lab.ctl(user, ["status"])
            #expect(reply.contains("service \(user).registration"), "ctl: \(reply)")
            #expect(failed, "no retrying registration logged: \(lab.actionLog(of: user))")
            #expect(registerAttempts(lab, user: user).count == 1, "retried before the backoff")
        }
    }

    @Test func aRestartedRegistrarHasLostItsBindings() async throws {
        try await DaemonLab.registered("amnesia") { lab in
            #expect(try await lab.boundContacts().contains { isContact($0, of: "amnesia", at: lab.initial.ipv4) })
            try await lab.registrar.restart()
            // Nothing makes a UDP client without flow pings register again this soon (expires 600 s).
            #expect(try await lab.boundContacts().isEmpty)
        }
    }

    /// The registrar is stopped for ~5 s and started again, with the client's flow to it lost:
    /// netres notices (TCP: the dropped connection; UDP: failed flow pings), retries with
    /// the executor's backoff (1 s, ×1.6, ±20 %) while the registrar is down, a bounded number
    /// of times, and the new registrar binds it within one backoff interval of its start.
    /// With subscriptions, the lost flow is one batch: the registrar sees the REGISTER that bound
    /// the account before any of its SUBSCRIBEs, and each subscription SUBSCRIBEd once.
    /// Either way the account ends bound at the registrar (`ul.dump`), once.
    func registersAgainAfterARegistrarRestart(
        _ user: String, transport: String, account: [String] = [], subscribed packages: Set<String> = []
    ) async throws {
        try await DaemonLab.registered(
            user, transport: transport, account: account + (packages.isEmpty ? [] : Self.subscriptions)
        ) { lab in
            if !packages.isEmpty {
                let subscribed = await eventually(within: .seconds(10)) {
                    Set(
                        lab.actionLog(of: user).filter { $0.action.hasSuffix("subscribe") && $0.outcome == "succeeded" }
                            .map(\.service)
                    ).count == packages.count
                }
                try #require(subscribed, "not every subscription succeeded: \(lab.actionLog(of: user))")
            }
            await lab.registrar.stop()
            try await Task.sleep(for: .seconds(5))
            // Any binding after this instant is the new registrar's: the old one is gone.
            let restartAt = realtime()
            try await lab.registrar.start()
            let retries = lab.actionLog(of: user).filter {
                $0.service == "\(user).registration" && $0.outcome == "retrying"
            }
            #expect((1...6).contains(retries.count), "retrying registrations while down: \(retries.count)")
            // The next delay is at most 1.2 × 1.6^(n−1) s after the n-th failure; 1 s of slack.
            let nextDelay = 1.2 * pow(1.6, Double(max(retries.count, 1) - 1)) + 1
            let rebound = await eventually(within: .seconds(nextDelay)) {
                lab.lines("REGISTERED", user: user).contains { $0.at > restartAt }
            }
            #expect(rebound, "not registered again within \(nextDelay) s of the registrar's restart")
            if !packages.isEmpty {
                let renewed = await eventually(within: .seconds(5)) {
                    Set(Self.authorizedSubscribes(lab, user: user, after: restartAt).map(\.package)) == packages
                }
                // One more second for a stray duplicate to show.
                try await Task.sleep(for: .seconds(1))
                let sent = Self.authorizedSubscribes(lab, user: user, after: restartAt).map(\.package)
                #expect(renewed, "SUBSCRIBEd after the restart: \(sent)")
                // Each SUBSCRIBE once: while the registrar is down, the flow of every REGISTER retry
                // is lost too, and a subscription named again by those reports was SUBSCRIBEd a
                // second time when the loss throttle released one after the retry that bound the
                // account (SIPRegistrarRestartLossTests pins the reports).
                #expect(
                    sent.count == Set(sent).count,
                    """
                    a subscription SUBSCRIBEd twice: \(lab.lines("AUTHORIZED", user: user).filter { $0.at > restartAt }.map(\.fields)); \
                    actions: \(lab.actionLog(of: user).suffix(30))
                    """
                )
                let binding = try #require(lab.lines("REGISTERED", user: user).first { $0.at > restartAt }?.at)
                let register = try #require(
                    lab.lines("REGISTER", user: user).last { $0.at > restartAt && $0.at < binding }?.at)
                let firstSubscribe = lab.lines("SUBSCRIBE", user: user).first {
                    $0.at > restartAt && $0.fields["src"]?.hasPrefix("\(lab.initial.ipv4):") == true
                }
                #expect(
                    firstSubscribe.map { $0.at > register } ?? false,
                    "REGISTER that bound at \(register), first SUBSCRIBE at \(firstSubscribe?.at ?? 0): \(firstSubscribe?.fields ?? [:])"
                )
            }
            let bound = try await lab.boundContacts().filter { isContact($0, of: user, at: lab.initial.ipv4) }
            #expect(bound.count == 1, "bindings of \(user) at the registrar: \(bound)")
        }
    }

    static let subscriptions = [
        "subscriptions:",
        "  - { package: presence-self }",
        "  - { package: reg }",
        "  - { package: message-summary }",
    ]
    static let packages: Set<String> = ["presence-self", "reg", "message-summary"]

    /// The client's SUBSCRIBEs that passed the registrar's challenge after `instant` (one per
    /// SUBSCRIBE the client meant to send: a challenged first try and its retry are one, a
    /// retransmission repeats its CSeq and is dropped here), named by package.
    static func authorizedSubscribes(_ lab: DaemonLab, user: String, after instant: Double) -> [(
        package: String, at: Double
    )] {
        var seen: Set<String> = []
        return lab.lines("AUTHORIZED", user: user).filter {
            $0.at > instant && $0.fields["method"] == "SUBSCRIBE"
                && seen.insert("\($0.fields["event"] ?? "") \($0.fields["cseq"] ?? "")").inserted
        }
        .map { line in
            let package = line.fields["event"] == "presence" ? "presence-self" : line.fields["event"] ?? ""
            return (package, line.at)
        }
    }

    @Test
    func overTCPTheDroppedFlowIsNoticedAndTheRestartedRegistrarBindsTheClientAgain() async throws {
        try await registersAgainAfterARegistrarRestart("tcpflow", transport: "tcp")
    }

    @Test
    func overUDPFlowPingsNoticeTheRestartAndTheRestartedRegistrarBindsTheClientAgain() async throws {
        try await registersAgainAfterARegistrarRestart("udpflow", transport: "udp", account: ["flow-ping: 1s"])
    }

    @Test
    func overTCPWithSubscriptionsTheRestartedRegistrarSeesRegisterFirstAndEachSubscribeOnce() async throws {
        try await registersAgainAfterARegistrarRestart("tcpsubs", transport: "tcp", subscribed: Self.packages)
    }

    @Test
    func overUDPWithSubscriptionsTheRestartedRegistrarSeesRegisterFirstAndEachSubscribeOnce() async throws {
        try await registersAgainAfterARegistrarRestart(
            "udpsubs", transport: "udp", account: ["flow-ping: 1s"], subscribed: Self.packages)
    }

    /// `netres run` killed with SIGKILL (no unregister) and started again with the same config
    /// (a new UDP port, so a new Contact): the first REGISTER carries the account's persistent
    /// `+sip.instance` from the state directory, and the registrar replaces the old binding.
    @Test func afterSIGKILLAndARestartTheRegistrarHoldsOneBindingOfTheAccount() async throws {
        let user = "crashed"
        try await DaemonLab.with { lab in
            let config = try lab.writeDaemonConfig(user: user)
            let first = try await lab.startClient(user: user, config: config)
            try #require(await eventually(within: .seconds(10)) { !lab.lines("REGISTERED", user: user).isEmpty })
            let before = try #require(lab.lines("REGISTERED", user: user).first?.contact)
            kill(first, SIGKILL)
            #expect(await eventually(within: .seconds(5)) { await lab.lab.exitStatus(of: first) != nil })
            let restartAt = realtime()
            try await lab.startClient(user: user, config: config)
            try #require(
                await eventually(within: .seconds(10)) {
                    lab.lines("REGISTERED", user: user).contains { $0.at > restartAt }
                })
            let after = try #require(lab.lines("REGISTERED", user: user).last?.contact)
            #expect(after != before, "the restart bound the same Contact \(after): nothing to replace")
            #expect(after.contains("+sip.instance"), "no instance in \(after)")
            let bound = try await lab.boundContacts().filter { isContact($0, of: user, at: lab.initial.ipv4) }
            #expect(bound.count == 1, "bindings of \(user) at the registrar: \(bound)")
        }
    }
}
