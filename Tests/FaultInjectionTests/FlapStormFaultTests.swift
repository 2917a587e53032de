import Foundation
import NetworkLab
import Testing

/// The built `netres run` in a client namespace, Kamailio in another, through a storm of admin
/// flaps and of app-state changes: flap damping keeps the requests per account bounded by a
/// small constant (before it: 200 flaps sent 400 REGISTERs and ~1,000 SUBSCRIBEs per account).
/// The policy shortens damping's times (half-life 2 s, at most 5 s) so the release fits the
/// suite's time limit; the thresholds are the defaults.
@Suite(.serialized, .needsNamespaces, .enabled(if: DaemonLab.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct FlapStormFaultTests {
    static let account = [
        "subscriptions:",
        "  - { package: reg }",
        "  - { package: presence-others, resource: \"sip:buddy@\(LabAddress.service4)\" }",
    ]

    /// Runs `body` with `user`'s `netres run` started under a short-damping policy and bound (≤ 10 s).
    func withDampedClient(_ user: String, _ body: (DaemonLab) async throws -> Void) async throws {
        try await DaemonLab.with { lab in
            let policy = lab.directory + "/policy.yaml"
            try "flap-damping: { half-life: 2s, max-suppression: 5s }\n".write(
                toFile: policy, atomically: true, encoding: .utf8)
            let config = try lab.writeDaemonConfig(user: user, account: Self.account)
            let text = try String(contentsOfFile: config, encoding: .utf8)
            try "policy: \(policy)\n\(text)".write(toFile: config, atomically: true, encoding: .utf8)
            try await lab.startClient(user: user, config: config)
            let bound = await eventually(within: .seconds(10)) { !lab.lines("REGISTERED", user: user).isEmpty }
            try #require(bound, "\(user) not registered within 10 s")
            try await body(lab)
        }
    }

    @Test func twoHundredAdminFlapsCostAFewRegistrationsAndTheLastReturnIsActedOn() async throws {
        let user = "storm"
        try await withDampedClient(user) { lab in
            let start = realtime()
            let storm = ContinuousClock.now
            // One shell in the client host plays the storm, so its pace does not depend on how busy
            // this test process's task pool is. Bounded in count and time: 200 cycles of ~100 ms,
            // killed (and the test failed) after 40 s. One line per flap counts them.
            let (interface, gateway) = (lab.initial.interface, lab.initial.gateway4)
            let script = """
                PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
                for i in $(seq 200); do ip link set \(interface) down; sleep 0.04
                ip -batch - <<EOF
                link set \(interface) up
                route replace default via \(gateway) dev \(interface) metric \(lab.link.metric)
                EOF
                sleep 0.04; echo flap; done
                """
            let output = try await lab.lab.run(in: lab.client, ["sh", "-c", script], timeout: .seconds(40))
            let flaps = output.split(separator: "\n").filter { $0 == "flap" }.count
            let end = realtime()
            // The last return is acted on once the penalty decays (at most 5 s after the last flap).
            let rebound = await eventually(within: .seconds(12)) {
                lab.lines("REGISTERED", user: user).contains { $0.at > end }
            }
            let registers = lab.lines("REGISTER", user: user).filter { $0.at > start }.count
            let subscribes = lab.lines("SUBSCRIBE", user: user).filter {
                $0.at > start && $0.fields["src"]?.hasPrefix("\(lab.initial.ipv4):") == true
            }.count
            print(
                "\(flaps) admin flaps in \(ContinuousClock.now - storm): \(registers) REGISTER, \(subscribes) SUBSCRIBE"
            )
            #expect(flaps == 200)
            #expect(rebound, "not registered again after the storm")
            // Each registration is two REGISTERs (digest challenge); two flaps act at once, the
            // release once: 3 registrations, plus slack for an unregister of an old contact.
            #expect(registers <= 10, "REGISTERs for 200 flaps: \(registers)")
            #expect(subscribes <= 18, "SUBSCRIBEs for 200 flaps: \(subscribes)")
        }
    }

    @Test func aHundredAppStateCyclesCostAFewSubscriptions() async throws {
        let user = "appstorm"
        try await withDampedClient(user) { lab in
            try await Task.sleep(for: .seconds(1))  // the start-up subscriptions are done
            let start = realtime()
            let storm = ContinuousClock.now
            var cycles = 0
            while cycles < 100, ContinuousClock.now - storm < .seconds(40) {
                for state in ["background", "foreground"] {
                    // A non-zero exit throws, with netres ctl's standard error.
                    try await lab.ctl(user, ["state", state])
                }
                cycles += 1
            }
            try await Task.sleep(for: .seconds(7))  // past the release (at most 5 s after the last change)
            let subscribes = lab.lines("SUBSCRIBE", user: user).filter {
                $0.at > start && $0.fields["src"]?.hasPrefix("\(lab.initial.ipv4):") == true
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
}
