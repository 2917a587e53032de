import Foundation
import NetworkLab

/// `netres-bench background-restart [after=S]`: what a registrar's restart costs an account in the
/// background at the default policy's wake-up interval (`wake-up-minimum-interval`, 600 s).
///
/// One `netres run` (`app-state: background`, the default policy) with one UDP and one TCP account
/// on the lab's Kamailio; `after` seconds once both are bound, Kamailio restarts with its
/// in-memory location table (every binding forgotten); the bench reads from the registrar's log
/// when each account is bound again (its first `REGISTERED` after the restart), waiting at most
/// 700 s. The registrar's round trip (OPTIONS from the client host, the median of 20) is the
/// baseline measured in the same run.
///
/// Invariants: every wait is bounded; the lab stops netres and Kamailio and removes its
/// namespaces at the end.
struct BackgroundRestartBenchmark {
    var after = 5
    static let bound = 700.0

    func run() async throws {
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let netres = bin.appendingPathComponent("netres").path
        try await SIPLab.with { lab, _ in
            let samples = try await RegistrarRoundTrip.measure(
                in: lab.lab, host: lab.client, from: lab.initial.ipv4, to: lab.registrarAddress, port: lab.port)
            let median = samples.sorted()[samples.count / 2]
            let roundTrip = Double(median.components.attoseconds) / 1e18 + Double(median.components.seconds)
            let users = [("bgudp", "udp"), ("bgtcp", "tcp")]
            var text = """
                log-format: json
                control-socket: \(lab.directory)/background.sock
                interfaces: [\(lab.initial.interface)]
                hold-down: 0
                app-state: background
                accounts:

                """
            for (user, transport) in users {
                text += """
                      - { name: \(user), registrar: \(lab.registrarAddress), port: \(lab.port), \
                    transport: \(transport), user: \(user), domain: \(lab.registrarAddress), password: secret-\(user) }

                    """
            }
            let config = lab.directory + "/background.yaml"
            try text.write(toFile: config, atomically: true, encoding: .utf8)
            let child = try await lab.start(
                in: lab.client, [netres, "run", "--config", config], output: lab.directory + "/background.log")
            try await waitFor(seconds: 60) {
                Set(try await lab.registrar.bindings().map(\.addressOfRecord)).isSuperset(of: users.map(\.0))
            }
            try await Task.sleep(for: .seconds(after))
            await lab.registrar.stop()
            try await lab.registrar.start()
            let upAt = realtime()
            func rebound(_ user: String) -> Double? {
                lab.registrarLog().first { $0.kind == "REGISTERED" && $0.user == user && $0.at > upAt }
                    .map { $0.at - upAt }
            }
            _ = await eventually(within: .seconds(Self.bound), every: .milliseconds(200)) {
                users.allSatisfy { rebound($0.0) != nil }
            }
            await lab.stop(child)
            print("## A registrar's restart in the background (`netres-bench background-restart`)\n")
            print(
                "`app-state: background`, default policy (`wake-up-minimum-interval: 600s`); Kamailio restarted"
                    + " \(after) s after both accounts were bound; the registrar's round trip (OPTIONS, median"
                    + " of 20): \(format3(roundTrip * 1000)) ms.\n")
            print(
                "| account | restart → bound again | ratio to the round trip | REGISTER transactions until both were bound |"
            )
            print("|---|---|---|---|")
            let end = users.compactMap { rebound($0.0) }.max().map { $0 + upAt } ?? realtime()
            for (user, transport) in users {
                let seconds = rebound(user)
                let shown = seconds.map { format3($0) + " s" } ?? "not within \(Int(Self.bound)) s"
                let ratio = seconds.map { String(format: "%.0f×", $0 / roundTrip) } ?? "n/a"
                let registers = Set(
                    lab.registrarLog().filter {
                        $0.kind == "REGISTER" && $0.user == user && $0.at > upAt && $0.at <= end
                    }
                    .map { $0.fields["cseq"] ?? "" }
                ).count
                print("| \(transport.uppercased()) (\(user)) | \(shown) | \(ratio) | \(registers) |")
            }
            print("")
        }
    }
}
