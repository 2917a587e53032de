import ChildProcesses
import Foundation
import NetworkLab

/// The SIP benches' lab: NetworkLab's ``ClientAndRegistrar`` (host `client`, link `nrc0` on
/// 198.18.1.2/24 at first, Kamailio in host `registrar` with 256 MiB of shared memory: `scale 1000`
/// keeps sipp's and netres's users bound at once), plus what the benches start and read there.
///
/// Invariants: the lab owns every namespace and process; ``with(tls:_:)`` removes them when the
/// bench returns or throws (and a later lab, or `netres lab gc`, when the bench was killed), after
/// copying the logs and captures to ``keptLogs``.
typealias SIPLab = ClientAndRegistrar

extension SIPLab {
    var directory: String { lab.directory }
    var registrarAddress: String { registrar.address }
    var port: Int { registrar.port }
    /// The registrar host's end of the client link (it stays up while `nrc0` flaps).
    var registrarInterface: String { initial.interface + "p" }

    /// Runs `body` with the lab up and Kamailio started; with `tls`, the certificates it makes in the
    /// lab's folder serve Kamailio's TLS listener (5061) and are handed to `body`.
    static func with<R: Sendable>(
        tls: (String) async throws -> TestCertificates? = { _ in nil },
        _ body: (SIPLab, TestCertificates?) async throws -> R
    ) async throws -> R {
        guard NetworkLab.isSupported else { throw BenchError("the SIP benches need root and iproute2") }
        return try await withNetworkLab { lab in
            let certificates = try await tls(lab.directory)
            let options = RegistrarOptions(
                tlsConfiguration: certificates?.kamailioConfig(), sharedMemoryMegabytes: 256, privateMemoryMegabytes: 8,
                udpWorkers: 2)  // as the figures in BENCHMARKS.md were taken
            // IPv4 only, as the figures in BENCHMARKS.md were taken: a flap is one route message.
            let sipLab = try await lab.addClientAndRegistrar(options: options, ipv6Route: false)
            defer { sipLab.keepLogs() }
            return try await body(sipLab, certificates)
        }
    }

    /// Where the logs and captures of this run are kept after the lab removed its own folder.
    static let keptLogs = "/tmp/netres-bench-\(getpid())"

    /// Copies the regular files of the lab's folder (Kamailio's log, the clients' logs, captures)
    /// to ``keptLogs``, at most 10,000 of them, and says where on standard error.
    func keepLogs() {
        let files = FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []
        try? FileManager.default.removeItem(atPath: Self.keptLogs)
        for file in files.prefix(10_000) {
            let source = directory + "/" + file
            guard
                (try? FileManager.default.attributesOfItem(atPath: source)[.type] as? FileAttributeType) == .typeRegular
            else { continue }
            let target = Self.keptLogs + "/" + file
            try? FileManager.default.createDirectory(
                atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try? FileManager.default.copyItem(atPath: source, toPath: target)
        }
        FileHandle.standardError.write(Data("logs and captures: \(Self.keptLogs)\n".utf8))
    }

    /// Starts a program in `host`; the lab stops it at the end. Its PID.
    @discardableResult
    func start(in host: LabHost, _ argv: [String], output: String) async throws -> pid_t {
        try await lab.spawn(in: host, argv, output: output)
    }

    /// Stops one process the lab started: `signal` first (SIGINT lets tcpdump flush), then the
    /// lab's SIGTERM and SIGKILL after 3 s.
    func stop(_ pid: pid_t, signal: Int32 = SIGTERM) async {
        if signal != SIGTERM {
            kill(pid, signal)
            _ = await eventually(within: .seconds(3)) { await lab.exitStatus(of: pid) != nil }
        }
        await lab.stop(pid)
    }

    /// Waits (≤ `bound`) for a process the lab started to exit by itself; its raw wait status.
    func waitForExit(_ pid: pid_t, within bound: Duration) async throws -> Int32 {
        var status: Int32?
        _ = await eventually(within: bound) {
            status = await lab.exitStatus(of: pid)
            return status != nil
        }
        guard let status else { throw BenchError("process \(pid) still running after \(bound)") }
        return status
    }

    /// Starts baresip 1.0 headless (foreground; modules g711, account, menu, ctrl_tcp) in the
    /// client host, registering `user` (password `secret-USER`) every 600 s. Its PID.
    @discardableResult
    func startBaresip(user: String) async throws -> pid_t {
        let config = directory + "/baresip"
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        try """
        poll_method\t\tepoll
        sip_trans_bsize\t\t128
        audio_player\t\tnone
        audio_source\t\tnone
        audio_alert\t\tnone
        module_path\t\t/usr/lib/baresip/modules
        module\t\t\tg711.so
        module_app\t\taccount.so
        module_app\t\tmenu.so
        module_app\t\tctrl_tcp.so
        ctrl_tcp_listen\t\t127.0.0.1:4444

        """.write(toFile: config + "/config", atomically: true, encoding: .utf8)
        try "<sip:\(user)@\(registrarAddress):\(port);transport=udp>;auth_pass=secret-\(user);regint=600\n"
            .write(toFile: config + "/accounts", atomically: true, encoding: .utf8)
        return try await start(in: client, ["/usr/bin/baresip", "-f", config], output: directory + "/baresip.log")
    }

    /// Datagrams the kernel dropped so far on the registrar's UDP sockets (the `drops` column of
    /// `/proc/net/udp` in its host, summed over every socket on its port).
    func registrarDrops() async throws -> Int {
        try await udpDrops(in: server, column: 1)
    }

    /// Datagrams the kernel dropped so far on the client host's UDP sockets connected to the
    /// registrar's port (netres's shared sockets; sipp and baresip do not connect theirs).
    func clientDrops() async throws -> Int {
        try await udpDrops(in: client, column: 2)
    }

    /// The `drops` column of `/proc/net/udp` in `host`, summed over the sockets whose local
    /// (`column` 1) or remote (2) address has the registrar's port.
    private func udpDrops(in host: LabHost, column: Int) async throws -> Int {
        let text = try await lab.run(in: host, ["cat", "/proc/net/udp"])
        let port = String(format: ":%04X", port)
        return text.split(separator: "\n").dropFirst().prefix(100_000).reduce(0) { sum, line in
            let fields = line.split(separator: " ")
            guard fields.count > column, fields[column].hasSuffix(port), let drops = Int(fields.last ?? "") else {
                return sum
            }
            return sum + min(drops, 1 << 40)
        }
    }

    /// Takes the client link admin-down for `seconds`, then up again with its default route
    /// (``ClientAndRegistrar/flapClientLink(downFor:)``); the CLOCK_REALTIME instant read just before
    /// it came up.
    func flapClientLink(downSeconds seconds: Int) async throws -> Double {
        try await flapClientLink(downFor: .seconds(seconds)).up
    }

    /// The registrar's request log (every `NRTEST` line so far).
    func registrarLog() -> [RegistrarRequest] { registrar.requests() }
}

/// Polls `condition` (NetworkLab's `eventually`) for at most `seconds`; throws when it never held.
func waitFor(seconds: Double, _ condition: () async throws -> Bool) async throws {
    let bound = Duration.milliseconds(Int64(max(0, seconds) * 1000))
    guard try await eventually(within: bound, every: .milliseconds(20), condition) else {
        throw BenchError("condition not met within \(seconds) s")
    }
}
