import Foundation
import NetworkLab

/// `netres-bench push [calls] [idle-seconds]`: RFC 8599 push, measured (issue 21, point 7).
///
/// One ``NetworkLab`` (a phone and a server host): Kamailio on the server as the push proxy with
/// the lab's push service (``LabPushService``, no added delay), which delivers each push by
/// running `netres ctl push` in the phone host. Two `netres run` in the phone: `sleeper` (push
/// token, suspended: asleep) and `awake` (no token, background). Then:
/// - `calls` times: sipp calls the sleeping `sleeper` (answered at once); per call, from the
///   proxy's push request (the push service's receipt) to the REGISTER it causes at the registrar,
///   and to sipp's 180 Ringing; beside it, in the same run, the floor: sipp's authenticated
///   REGISTER round trip from the phone host to the same registrar;
/// - `idle-seconds` (default 600, the issue's 10 minutes) of rest for both: each daemon's wake-ups
///   and CPU, and the requests each account sent to the registrar.
///
/// Invariants: every wait is bounded (15 s per step); the lab removes its namespaces and processes.
struct PushBenchmark {
    var calls = 10
    var idleSeconds = 600
    /// Seconds after the sleeper fell asleep for the last call's transaction timers to end (RFC
    /// 3261's 64×T1 = 32 s, and a margin) before the rest window starts.
    static let transactionTimersEnd = 40

    static let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Tests/FaultInjectionTests/Resources/sipp/uac-push-call.xml").standardized.path

    func run() async throws {
        let netres = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("netres").path
        try await withNetworkLab { lab in
            let dir = lab.directory
            let phone = try await lab.addHost("phone")
            let server = try await lab.addHost("server")
            let wifi = try await lab.connect(phone, to: server, as: "wifi")
            let registrar = try await lab.startRegistrar(
                in: server, options: RegistrarOptions(pushService: "\(LabAddress.service4):8088"))
            let service = try await lab.startPushService(
                in: server, address: LabAddress.service4, deliverIn: phone,
                command: [netres, "ctl", "--socket", dir + "/sleeper.sock", "push", "@ACCOUNT@", "--kind", "@KIND@"])
            try "bench-token\n".write(toFile: dir + "/sleeper.token", atomically: true, encoding: .utf8)
            var pids: [Int32] = []
            for (user, extra) in [
                ("sleeper", ", push: {provider: apns, token-file: \(dir)/sleeper.token}, incoming-calls: answer"),
                ("awake", ""),
            ] {
                try """
                control-socket: \(dir)/\(user).sock
                interfaces: [wifi]
                hold-down: 0
                app-state: background
                state-directory: \(dir)/state-\(user)
                accounts: [{name: \(user), registrar: \(registrar.address), domain: \(registrar.address),
                            transport: udp, user: \(user), password: secret-\(user), expires: 3600\(extra)}]

                """.write(toFile: dir + "/\(user).yaml", atomically: true, encoding: .utf8)
                pids.append(
                    try await lab.spawn(
                        in: phone, [netres, "run", "--config", dir + "/\(user).yaml"], output: dir + "/\(user).log"))
            }
            guard
                try await eventually(within: .seconds(15), { try await registrar.bindings().count >= 2 })
            else { throw BenchError("push: both daemons not bound within 15 s; see \(dir)") }
            func released() -> Int {
                ((try? String(contentsOfFile: dir + "/sleeper.log", encoding: .utf8)) ?? "").split(separator: "\n")
                    .filter { $0.contains(" release-flow sleeper") && $0.contains("-> succeeded") }.count
            }
            _ = try await lab.run(in: phone, [netres, "ctl", "--socket", dir + "/sleeper.sock", "state", "suspended"])
            var toRegister: [Duration] = []
            var toRinging: [Duration] = []
            for call in 0..<calls {
                guard await eventually(within: .seconds(15), { released() > call }) else {
                    throw BenchError("push: sleeper not asleep before call \(call + 1); see \(dir)/sleeper.log")
                }
                let caller = try await lab.startSIPp(
                    in: server, scenario: Self.scenario, address: registrar.address, port: 5100 + call,
                    mediaPort: 16_100 + 2 * call, remote: "\(registrar.address):\(registrar.port)",
                    arguments: ["-s", "sleeper"])
                guard
                    await eventually(
                        within: .seconds(15), { caller.messages().contains { !$0.sent && $0.status == 180 } }),
                    let pushed = service.requests.last?.at,
                    let ringing = caller.messages().first(where: { !$0.sent && $0.status == 180 })?.at
                else { throw BenchError("push: call \(call + 1) did not ring: \(caller.diagnostics())") }
                let register = registrar.requests().first {
                    $0.kind == "REGISTER" && $0.user == "sleeper" && $0.at > pushed
                }
                if let register { toRegister.append(.microseconds(Int64((register.at - pushed) * 1e6))) }
                toRinging.append(.microseconds(Int64((ringing - pushed) * 1e6)))
                _ = await caller.exitCode(within: .seconds(15))
            }
            var floor = CallRecoveryBenchmark()
            floor.floorSamples = 30
            let floorSamples = try await floor.measureFloor(
                lab, phone: phone, address: await lab.addresses(of: wifi).ipv4, registrar: registrar)
            guard await eventually(within: .seconds(15), { released() > calls }) else {
                throw BenchError("push: sleeper not asleep after the calls; see \(dir)/sleeper.log")
            }
            // The last call's SIP transactions end on their own timers (timer L of the answered
            // INVITE and the like: at most 64×T1 = 32 s after the call): cost of the call, not of
            // sleeping, so measured apart before the rest window.
            let afterCall = IdleMeter.measure(pids, seconds: Self.transactionTimersEnd)
            let before = Dictionary(grouping: registrar.requests(), by: \.user).mapValues(\.count)
            let costs = IdleMeter.measure(pids, seconds: idleSeconds)
            let after = Dictionary(grouping: registrar.requests(), by: \.user).mapValues(\.count)
            let sent = ["sleeper", "awake"].map { (after[$0] ?? 0) - (before[$0] ?? 0) }
            print(
                Self.report(
                    toRegister: LatencyStats(toRegister), toRinging: LatencyStats(toRinging),
                    floor: LatencyStats(floorSamples), afterCall: afterCall, costs: costs, sent: sent,
                    seconds: idleSeconds))
        }
    }

    static func report(
        toRegister: LatencyStats, toRinging: LatencyStats, floor: LatencyStats, afterCall: [IdleCost],
        costs: [IdleCost], sent: [Int], seconds: Int
    ) -> String {
        var lines = [
            "| push (µs) | n | p50 | p99 | max | ratio to the floor |", "|---|---|---|---|---|---|",
            floor.row("floor: sipp's REGISTER round trip (phone → registrar)", floor: nil),
            toRegister.row("push request → the woken client's REGISTER at the registrar", floor: floor),
            toRinging.row("push request → caller sees 180 Ringing", floor: floor),
            "",
            "| client at rest (same \(seconds) s window) | wake-ups | per minute | CPU | requests to the registrar |",
            "|---|---|---|---|---|",
        ]
        let labels = ["suspended with a push token (asleep)", "background, no push token"]
        for (index, (label, cost)) in zip(labels, costs).enumerated() {
            lines.append(
                "| \(label) | \(cost.wakeups) | \(format1(cost.perMinute)) | \(cost.cpu) | \(sent[index]) |")
        }
        lines += [
            "",
            "| the \(transactionTimersEnd) s after the last call, before the rest window | wake-ups |",
            "|---|---|",
        ]
        for (label, cost) in zip(labels, afterCall) { lines.append("| \(label) | \(cost.wakeups) |") }
        return lines.joined(separator: "\n")
    }
}
