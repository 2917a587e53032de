import Foundation
import Testing

/// The built `netres run` in a client namespace, Kamailio in another, through a storm of admin
/// flaps and of app-state changes: flap damping keeps the requests per account bounded by a
/// small constant (before it: 200 flaps sent 400 REGISTERs and ~1,000 SUBSCRIBEs per account).
/// The policy shortens damping's times (half-life 2 s, at most 5 s) so the release fits the
/// suite's time limit; the thresholds are the defaults.
@Suite(.serialized, .needsNamespaces, .enabled(if: RegistrarLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(1)))
struct FlapStormFaultTests {
    static let account = [
        "subscriptions:",
        "  - { package: reg }",
        "  - { package: presence-others, resource: \"sip:buddy@198.18.0.1\" }",
    ]

    /// A lab with `user`'s `netres run` started under a short-damping policy and bound (≤ 10 s).
    func dampedClient(_ user: String) async throws -> RegistrarLab {
        let lab = try await RegistrarLab.running()
        let policy = lab.directory.appendingPathComponent("policy.yaml").path
        try "flap-damping: { half-life: 2s, max-suppression: 5s }\n".write(
            toFile: policy, atomically: true, encoding: .utf8)
        let config = try lab.writeDaemonConfig(user: user, account: Self.account)
        let text = try String(contentsOfFile: config, encoding: .utf8)
        try "policy: \(policy)\n\(text)".write(toFile: config, atomically: true, encoding: .utf8)
        try lab.startClient(user: user, config: config)
        let bound = await waitUntil(seconds: 10) { !lab.lines("REGISTERED", user: user).isEmpty }
        if !bound { lab.stop() }
        try #require(bound, "\(user) not registered within 10 s")
        return lab
    }

    @Test func twoHundredAdminFlapsCostAFewRegistrationsAndTheLastReturnIsActedOn() async throws {
        let user = "storm"
        let lab = try await dampedClient(user)
        defer { lab.stop() }
        let start = realtime()
        let storm = ContinuousClock.now
        var flaps = 0
        // Bounded in count and time: 200 cycles of ~100 ms, never more than 40 s.
        while flaps < 200, ContinuousClock.now - storm < .seconds(40) {
            try lab.client.ip("link set nrc0 down")
            try await Task.sleep(for: .milliseconds(40))
            try lab.client.batch(["link set nrc0 up", "route replace default via 198.18.0.1"])
            try await Task.sleep(for: .milliseconds(40))
            flaps += 1
        }
        let end = realtime()
        // The last return is acted on once the penalty decays (at most 5 s after the last flap).
        let rebound = await waitUntil(seconds: 12) { lab.lines("REGISTERED", user: user).contains { $0.at > end } }
        let registers = lab.lines("REGISTER", user: user).filter { $0.at > start }.count
        let subscribes = lab.lines("SUBSCRIBE", user: user).filter {
            $0.at > start && $0.fields["src"]?.hasPrefix("198.18.0.2:") == true
        }.count
        print("\(flaps) admin flaps in \(ContinuousClock.now - storm): \(registers) REGISTER, \(subscribes) SUBSCRIBE")
        #expect(flaps == 200)
        #expect(rebound, "not registered again after the storm")
        // Each registration is two REGISTERs (digest challenge); two flaps act at once, the
        // release once: 3 registrations, plus slack for an unregister of an old contact.
        #expect(registers <= 10, "REGISTERs for 200 flaps: \(registers)")
        #expect(subscribes <= 18, "SUBSCRIBEs for 200 flaps: \(subscribes)")
    }

    @Test func aHundredAppStateCyclesCostAFewSubscriptions() async throws {
        let user = "appstorm"
        let lab = try await dampedClient(user)
        defer { lab.stop() }
        try await Task.sleep(for: .seconds(1))  // the start-up subscriptions are done
        let start = realtime()
        let storm = ContinuousClock.now
        var cycles = 0
        while cycles < 100, ContinuousClock.now - storm < .seconds(40) {
            for state in ["background", "foreground"] {
                let reply = try await lab.run(
                    in: lab.client,
                    [RegistrarLab.netres, "ctl", "--socket", lab.controlSocket(of: user), "state", state])
                try #require(reply.status == 0, "netres ctl state \(state): \(reply.output)")
            }
            cycles += 1
        }
        try await Task.sleep(for: .seconds(7))  // past the release (at most 5 s after the last change)
        let subscribes = lab.lines("SUBSCRIBE", user: user).filter {
            $0.at > start && $0.fields["src"]?.hasPrefix("198.18.0.2:") == true
        }.count
        let registers = lab.lines("REGISTER", user: user).filter { $0.at > start }.count
        print(
            "\(cycles) app-state cycles in \(ContinuousClock.now - storm): \(subscribes) SUBSCRIBE, \(registers) REGISTER"
        )
        #expect(cycles == 100)
        #expect(subscribes <= 8, "SUBSCRIBEs for 100 app-state cycles: \(subscribes)")
        #expect(registers <= 6, "REGISTERs for 100 app-state cycles: \(registers)")
    }
}
