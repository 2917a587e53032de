import Foundation
import NetworkLab

/// `netres-bench amnesia [udp=N] [tcp=M] [ping=S]`: what checking bindings costs, and what it buys
/// when the registrar restarts and forgets every binding (issue 23 point 6).
///
/// In one ``SIPLab``: the registrar's round trip (OPTIONS from the client host, the median of 20);
/// then `netres run` with N UDP and M TCP accounts (`flow-ping: S`, foreground) twice, with
/// `binding-check` on and off: once all are bound and a ping interval has passed, a window of two
/// intervals counts the requests the registrar saw from them (REGISTER transactions, the queries
/// among them, OPTIONS) and netres's wake-ups (context switches of every thread) and CPU; then
/// the registrar restarts (an in-memory location table: every binding forgotten), and the bench
/// waits for all of them to be bound again, at most four intervals.
///
/// Invariants: every wait is bounded; each `netres run` is stopped before the next starts; the
/// lab removes its namespaces and processes at the end.
struct AmnesiaBenchmark {
    var udpAccounts = 50
    var tcpAccounts = 10
    var flowPing = 30

    struct Figures {
        var requestsPerMinute: [String: Double]
        var wakeUpsPerMinute: Double
        var cpu: Duration
        var reboundAfter: Double?
        var reboundCount: Int
        var registersAfterRestart: Int
    }

    func run() async throws {
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let netres = bin.appendingPathComponent("netres").path
        try await SIPLab.with { lab, _ in
            let roundTrip = try await registrarRoundTrip(lab)
            let total = udpAccounts + tcpAccounts
            print("## A registrar that forgets (`netres-bench amnesia`)\n")
            print(
                "\(udpAccounts) UDP and \(tcpAccounts) TCP accounts, `flow-ping: \(flowPing)s`, foreground; the"
                    + " registrar's round trip (OPTIONS, median of 20): \(format3(roundTrip * 1000)) ms.\n")
            print(
                "| `binding-check` | requests/min at the registrar: REGISTER (queries) · OPTIONS | netres wake-ups/min | CPU in the window | restart → all \(total) bound | REGISTER transactions after the restart |"
            )
            print("|---|---|---|---|---|---|")
            for checks in [true, false] {
                let figures = try await measure(lab, netres: netres, checks: checks)
                let requests = figures.requestsPerMinute
                let rebound =
                    figures.reboundAfter.map { format3($0) + " s" }
                    ?? "not within \(flowPing * 4) s (\(figures.reboundCount)/\(total) bound)"
                print(
                    "| \(checks ? "on" : "off") | \(format1(requests["REGISTER"] ?? 0)) (\(format1(requests["QUERIED"] ?? 0))) · \(format1(requests["OPTIONS"] ?? 0)) | \(format1(figures.wakeUpsPerMinute)) | \(figures.cpu) | \(rebound) | \(figures.registersAfterRestart) |"
                )
            }
            print("")
        }
    }

    /// One `netres run` with `binding-check` on or off: its window's figures, then the restart's.
    private func measure(_ lab: SIPLab, netres: String, checks: Bool) async throws -> Figures {
        let prefix = checks ? "checked" : "assumed"
        let users =
            (0..<udpAccounts).map { ("\(prefix)u\($0)", "udp") } + (0..<tcpAccounts).map { ("\(prefix)t\($0)", "tcp") }
        var text = """
            log-format: json
            control-socket: \(lab.directory)/\(prefix).sock
            interfaces: [\(lab.initial.interface)]
            hold-down: 0
            accounts:

            """
        for (user, transport) in users {
            text += """
                  - { name: \(user), registrar: \(lab.registrarAddress), port: \(lab.port), transport: \(transport), \
                user: \(user), domain: \(lab.registrarAddress), password: secret-\(user), flow-ping: \(flowPing)s, \
                binding-check: \(checks ? "on" : "off") }

                """
        }
        let config = lab.directory + "/\(prefix).yaml"
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let child = try await lab.start(
            in: lab.client, [netres, "run", "--config", config], output: lab.directory + "/\(prefix).log")
        let everyone = Set(users.map(\.0))
        try await waitFor(seconds: 60) { try await bound(lab, prefix: prefix) == everyone }
        try await Task.sleep(for: .seconds(flowPing))
        let windowStart = realtime()
        let cost = IdleMeter.measure([child], seconds: flowPing * 2)[0]
        let window = lab.registrarLog().filter { $0.user.hasPrefix(prefix) && $0.at > windowStart }
        let minutes = Double(flowPing * 2) / 60
        var requests: [String: Double] = [:]
        for kind in ["REGISTER", "QUERIED", "OPTIONS"] {
            let lines = window.filter { $0.kind == kind }
            let count =
                kind == "REGISTER" ? Set(lines.map { "\($0.user) \($0.fields["cseq"] ?? "")" }).count : lines.count
            requests[kind] = Double(count) / minutes
        }
        await lab.registrar.stop()
        try await lab.registrar.start()
        let upAt = realtime()
        let rebound = await eventually(within: .seconds(flowPing * 4), every: .milliseconds(200)) {
            (try? await bound(lab, prefix: prefix)) == everyone
        }
        let after = lab.registrarLog().filter { $0.user.hasPrefix(prefix) && $0.at > upAt }
        let last = after.filter { $0.kind == "REGISTERED" }.map(\.at).max()
        let registers = Set(after.filter { $0.kind == "REGISTER" }.map { "\($0.user) \($0.fields["cseq"] ?? "")" })
        // Counted before the stop: netres unregisters every account on its way out.
        let boundAtTheEnd = (try? await bound(lab, prefix: prefix).count) ?? 0
        await lab.stop(child)
        return Figures(
            requestsPerMinute: requests, wakeUpsPerMinute: cost.perMinute, cpu: cost.cpu,
            reboundAfter: rebound ? last.map { $0 - upAt } : nil, reboundCount: boundAtTheEnd,
            registersAfterRestart: registers.count)
    }

    /// The users with `prefix` bound at the registrar now (`ul.dump`).
    private func bound(_ lab: SIPLab, prefix: String) async throws -> Set<String> {
        Set(try await lab.registrar.bindings().map(\.addressOfRecord).filter { $0.hasPrefix(prefix) })
    }

    /// The median round trip, in seconds, of 20 OPTIONS from the client host to the registrar.
    private func registrarRoundTrip(_ lab: SIPLab) async throws -> Double {
        let samples = try await RegistrarRoundTrip.measure(
            in: lab.lab, host: lab.client, from: lab.initial.ipv4, to: lab.registrarAddress, port: lab.port)
        let median = samples.sorted()[samples.count / 2]
        return Double(median.components.attoseconds) / 1e18 + Double(median.components.seconds)
    }
}
