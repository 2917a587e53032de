import ChildProcesses
import Foundation
import Glibc
import NetworkLab
import ResilienceDaemon

/// `netres-bench ctl [runs] [pushes]`: what a push handler pays to reach the daemon.
///
/// 1. Process start to answer: `netres ctl status` (the 80 MB `netres`, which loads Foundation
///    and ICU), `netres-ctl status` (the client alone, standard library only) and
///    `netres --help` against a running `netres run` (no account, its socket in a scratch
///    folder), beside `/bin/true`, the floor of starting any process here; `runs` of each.
/// 2. Push to REGISTER: one ``NetworkLab`` (a phone with `netres run` for `alice`, Kamailio on the
///    server); `pushes` pushes each way: over a session kept open (the protocol's `push`
///    message), and by starting `netres-ctl push` and `netres ctl push` per push; from the push
///    leaving the bench to the REGISTER it causes at the registrar, as ratios to the registrar's
///    round trip (OPTIONS from the phone) in the same run.
///
/// Invariants: every wait is bounded (10 s per push); the lab removes its namespaces and processes.
struct ControlClientBenchmark {
    var runs = 50
    var pushes = 20

    func run() async throws {
        let folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let netres = folder.appendingPathComponent("netres").path
        let ctl = folder.appendingPathComponent("netres-ctl").path
        guard FileManager.default.isExecutableFile(atPath: ctl) else {
            throw BenchError("ctl: no \(ctl): swift build -c release --product netres-ctl")
        }
        print(try await startTimes(netres: netres, ctl: ctl))
        print("")
        print(try await pushTimes(netres: netres, ctl: ctl))
    }

    /// Spawns `argv` and waits for it to exit, off the pool; how long that took.
    static func timed(_ argv: [String]) async throws -> Duration {
        try await OffThePool.run { () throws -> Duration in
            let start = ContinuousClock.now
            let finished = try ChildProcess.run(argv)
            guard finished.exitCode == 0 else {
                throw BenchError("\(argv): exit \(finished.exitCode): \(finished.errors)")
            }
            return ContinuousClock.now - start
        }
    }

    func startTimes(netres: String, ctl: String) async throws -> String {
        let directory = "/tmp/netres-bench-ctl-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/control.sock"
        try "control-socket: \(socket)\ninterfaces: [lo]\naccounts: []\n".write(
            toFile: directory + "/netres.yaml", atomically: true, encoding: .utf8)
        let daemon = try ChildProcess(
            [netres, "run", "--config", directory + "/netres.yaml"], output: directory + "/log")
        defer {
            kill(daemon.pid, SIGTERM)
            _ = daemon.waitForExit()
        }
        guard await eventually(within: .seconds(15), { FileManager.default.fileExists(atPath: socket) }) else {
            throw BenchError("ctl: netres run did not open \(socket)")
        }
        let commands: [(String, [String])] = [
            ("/bin/true (starting any process)", ["/bin/true"]),
            ("netres-ctl status", [ctl, "--socket", socket, "status"]),
            ("netres ctl status", [netres, "ctl", "--socket", socket, "status"]),
            ("netres --help", [netres, "--help"]),
        ]
        var rows = [
            "| process start → exit (ms) | n | p50 | p99 | max | ratio to /bin/true |", "|---|---|---|---|---|---|",
        ]
        var floor: LatencyStats?
        for (label, argv) in commands {
            _ = try await Self.timed(argv)  // warm the page cache
            var samples: [Duration] = []
            for _ in 0..<runs { samples.append(try await Self.timed(argv)) }
            let stats = LatencyStats(samples)
            floor = floor ?? stats
            rows.append(Self.row(label, stats, floor: floor!))
        }
        return rows.joined(separator: "\n")
    }

    func pushTimes(netres: String, ctl: String) async throws -> String {
        try await withNetworkLab { lab in
            let phone = try await lab.addHost("phone")
            let server = try await lab.addHost("server")
            let wifi = try await lab.connect(phone, to: server, as: "wifi")
            let registrar = try await lab.startRegistrar(in: server)
            let socket = lab.directory + "/netres.sock"
            try """
            control-socket: \(socket)
            interfaces: [wifi]
            hold-down: 0
            accounts: [{name: alice, registrar: \(registrar.address), domain: \(registrar.address), transport: udp,
                        user: alice, password: secret-alice, expires: 3600}]

            """.write(toFile: lab.directory + "/netres.yaml", atomically: true, encoding: .utf8)
            try await lab.spawn(
                in: phone, [netres, "run", "--config", lab.directory + "/netres.yaml"],
                output: lab.directory + "/netres.log")
            guard try await eventually(within: .seconds(15), { try await registrar.bindings().count >= 1 }) else {
                throw BenchError("ctl: alice not bound; see \(lab.directory)/netres.log")
            }
            let rtt = LatencyStats(
                try await RegistrarRoundTrip.measure(
                    in: lab, host: phone, from: await lab.addresses(of: wifi).ipv4, to: registrar.address, port: 5060))
            let session = try PushSession(socket: socket)
            defer { session.close() }
            var rows = [
                "| push → alice's REGISTER at the registrar (ms) | n | p50 | p99 | max | ratio to the registrar's round trip |",
                "|---|---|---|---|---|---|",
                "| the registrar's round trip (OPTIONS, phone → Kamailio; µs) | \(rtt.count) | \(format1(rtt.p50)) µs "
                    + "| \(format1(rtt.p99)) µs | \(format1(rtt.max)) µs | 1× |",
            ]
            let ways: [(String, @Sendable () async throws -> Void)] = [
                ("a `push` message on a session kept open", { try session.push("alice") }),
                (
                    "`netres-ctl push alice` started per push",
                    { _ = try await Self.timed([ctl, "--socket", socket, "push", "alice"]) }
                ),
                (
                    "`netres ctl push alice` started per push",
                    { _ = try await Self.timed([netres, "ctl", "--socket", socket, "push", "alice"]) }
                ),
            ]
            // Round robin, a second apart: no way rides on another's warm caches or pacing.
            var samples = [[Duration]](repeating: [], count: ways.count)
            for _ in 0..<pushes {
                for (index, (label, push)) in ways.enumerated() {
                    try await Task.sleep(for: .seconds(1))  // the previous REGISTER's transaction is done
                    let sent = realtime()
                    try await push()
                    func register() -> RegistrarRequest? {
                        registrar.requests().first { $0.kind == "REGISTER" && $0.user == "alice" && $0.at > sent }
                    }
                    guard await eventually(within: .seconds(10), { register() != nil }), let register = register()
                    else { throw BenchError("ctl: no REGISTER after a push (\(label))") }
                    samples[index].append(.microseconds(Int64((register.at - sent) * 1e6)))
                }
            }
            for (index, (label, _)) in ways.enumerated() {
                rows.append(Self.row(label, LatencyStats(samples[index]), floor: rtt))
            }
            return rows.joined(separator: "\n")
        }
    }

    static func row(_ label: String, _ stats: LatencyStats, floor: LatencyStats) -> String {
        "| \(label) | \(stats.count) | \(format1(stats.p50 / 1000)) | \(format1(stats.p99 / 1000)) | "
            + "\(format1(stats.max / 1000)) | \(format1(stats.p50 / floor.p50))× |"
    }
}

/// A control-socket session kept open for pushes (the external plugin protocol's `push`).
final class PushSession: Sendable {
    let fd: Int32

    init(socket: String) throws {
        fd = try ControlClient.connect(socket: socket)
        try send(#"{"type":"hello","protocol":1}"#)
        _ = try readLine()
    }

    func push(_ account: String) throws {
        try send(#"{"type":"push","account":"\#(account)","kind":"call"}"#)
    }

    func send(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count
        else { throw BenchError("push session: send failed") }
    }

    /// One line (blocking, 10 s at most: the socket's timeout).
    func readLine() throws -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        throw BenchError("push session: no reply")
    }

    func close() { Glibc.close(fd) }
}
