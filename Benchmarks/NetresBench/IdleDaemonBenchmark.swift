import Foundation
import NetworkLab

/// `netres-bench idle-daemon [seconds]`: what a daemon that has done things costs at rest.
///
/// In one ``NetworkLab`` (a phone and a server host, Kamailio on the server): `netres run` with one
/// background UDP account and a hook directory runs its hook on the first transition and on both
/// transitions of a carrier flap, answers a control-socket query, and stays registered; beside it
/// `netres wait-online` waits (on an interface that does not exist) for longer than the window.
/// Then one window counts every thread's context switches of both, beside a bare Swift program
/// awaiting an empty `AsyncStream` and the same program with the runtime taken off libdispatch,
/// all over the same seconds.
///
/// Invariants: every wait is bounded (10 s for each step, the window plus 30 s for wait-online);
/// the lab removes its namespaces and processes at the end, the baselines are stopped by PID.
struct IdleDaemonBenchmark {
    var seconds = 60

    func run() async throws {
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let netres = bin.appendingPathComponent("netres").path
        let bench = bin.appendingPathComponent("netres-bench").path
        let baseline = try Spawned([bench, "idle-baseline"])
        let quiet = try Spawned([bench, "idle-baseline", "quiet"])
        defer {
            for child in [baseline, quiet] { child.stop() }
        }
        try await withNetworkLab { lab in
            let phone = try await lab.addHost("phone")
            let server = try await lab.addHost("server")
            let wifi = try await lab.connect(phone, to: server, as: "wifi")
            let registrar = try await lab.startRegistrar(in: server)
            let hooks = lab.directory + "/hooks.d"
            let ran = lab.directory + "/hook-ran"
            try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: true)
            try "#!/bin/sh\necho \"$NETRES_EVENT\" >> \(ran)\n".write(
                toFile: hooks + "/10-record", atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hooks + "/10-record")
            let config = lab.directory + "/idle.yaml"
            try """
            control-socket: \(lab.directory)/idle.sock
            interfaces: [wifi]
            hold-down: 0
            app-state: background
            hooks: { directory: \(hooks), timeout: 5s }
            accounts: [{name: idle, registrar: \(registrar.address), domain: \(registrar.address), transport: udp,
                        user: idle, password: secret-idle, expires: 3600}]
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try await lab.spawn(
                in: phone, [netres, "run", "--config", config], output: lab.directory + "/idle-daemon.log")
            func hookRuns() -> Int {
                ((try? String(contentsOfFile: ran, encoding: .utf8)) ?? "").split(separator: "\n").count
            }
            guard
                try await eventually(
                    within: .seconds(10),
                    {
                        let bound = try await registrar.bindings().count
                        return hookRuns() >= 1 && bound == 1
                    })
            else { throw BenchError("idle-daemon: not registered, or no hook ran, within 10 s; see \(lab.directory)") }
            try await lab.inject(.carrierLoss(wifi, for: .seconds(2)))
            guard
                try await eventually(
                    within: .seconds(10),
                    {
                        let bound = try await registrar.bindings().count
                        return hookRuns() >= 3 && bound == 1
                    })
            else { throw BenchError("idle-daemon: the flap's hooks did not run within 10 s; see \(lab.directory)") }
            _ = try await lab.run(in: phone, [netres, "ctl", "--socket", lab.directory + "/idle.sock", "status"])
            let waiting = try await lab.spawn(
                in: phone, [netres, "wait-online", "--interface", "nosuch0", "--timeout", "\(seconds + 30)s"],
                output: lab.directory + "/wait-online.log")
            sleep(5)  // the last transactions end, worker threads settle
            let costs = IdleMeter.measure([daemon, waiting, baseline.pid, quiet.pid], seconds: seconds)
            print(Self.report(costs, hookRuns: hookRuns(), seconds: seconds))
        }
    }

    static func report(_ costs: [IdleCost], hookRuns: Int, seconds: Int) -> String {
        let labels = [
            "`netres run`, 1 background account, after \(hookRuns) hook runs, a flap and a `ctl status`",
            "`netres wait-online`, waiting (path never satisfied)",
            "baseline: Swift program awaiting an empty AsyncStream",
            "baseline with the runtime taken off libdispatch (`idle-baseline quiet`)",
        ]
        var lines = [
            "| process (same \(seconds) s window) | wake-ups | per minute | CPU | VmRSS |", "|---|---|---|---|---|",
        ]
        for (label, cost) in zip(labels, costs) {
            lines.append(
                "| \(label) | \(cost.wakeups) | \(format1(cost.perMinute)) | \(cost.cpu) | \(cost.residentKiB) KiB |")
        }
        return lines.joined(separator: "\n")
    }
}
