import ChildProcesses
import Foundation

/// Two network namespaces joined by a veth pair: the registrar side `nrr-<pid>` (`nrr0`,
/// 198.18.0.1/24, Kamailio from the SIP tests' template on UDP 5060) and the client side
/// `nrc-<pid>` (`nrc0`, 198.18.0.2/24, default route via 198.18.0.1).
///
/// Invariants: only 198.18.0.0/15 addresses; nothing is routed out of the two namespaces; every
/// process the lab starts is recorded and `tearDown()` stops each by PID before deleting both
/// namespaces — call it in a `defer`, it is safe to call twice and after a partial `init`.
final class SIPLab {
    static let registrarAddress = "198.18.0.1"
    static let clientAddress = "198.18.0.2"
    static let port = 5060

    let registrarNamespace = "nrr-\(getpid())"
    let clientNamespace = "nrc-\(getpid())"
    let directory: URL
    private(set) var processes: [Spawned] = []
    private var namespacesCreated = false

    var kamailioLog: String { directory.appendingPathComponent("kamailio.log").path }
    var controlSocket: String { directory.appendingPathComponent("ctl.sock").path }

    init() throws {
        guard getuid() == 0 else { throw BenchError("sip-recovery needs root (it creates network namespaces)") }
        directory = URL(fileURLWithPath: "/tmp/nr-sip-lab-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try shell("ip netns add \(registrarNamespace) && ip netns add \(clientNamespace)")
        namespacesCreated = true
        try shell(
            """
            ip link add nrr0 netns \(registrarNamespace) type veth peer name nrc0 netns \(clientNamespace) && \
            ip -n \(registrarNamespace) link set lo up && ip -n \(clientNamespace) link set lo up && \
            ip -n \(registrarNamespace) addr add \(Self.registrarAddress)/24 dev nrr0 && \
            ip -n \(clientNamespace) addr add \(Self.clientAddress)/24 dev nrc0 && \
            ip -n \(registrarNamespace) link set nrr0 up && ip -n \(clientNamespace) link set nrc0 up && \
            ip -n \(clientNamespace) route add default via \(Self.registrarAddress) && \
            ip netns exec \(clientNamespace) sysctl -qw net.ipv4.conf.all.promote_secondaries=1
            """)
    }

    /// Starts a program inside the client or registrar namespace; the lab stops it at tear-down.
    @discardableResult
    func start(in namespace: String, _ argv: [String], output: String) throws -> Spawned {
        let child = try Spawned(["/usr/sbin/ip", "netns", "exec", namespace] + argv, output: output, newGroup: true)
        processes.append(child)
        return child
    }

    /// Stops one process the lab started (by PID) and forgets it.
    func stop(_ child: Spawned, signal: Int32 = SIGTERM) {
        child.stop(signal: signal)
        processes.removeAll { $0.pid == child.pid }
    }

    /// Writes the Kamailio config (the SIP tests' template on 198.18.0.1, IPv6 listeners dropped),
    /// starts Kamailio in the registrar namespace and waits (≤ 10 s) for its control socket.
    /// With `tls`, its TLS listener (5061) serves that server certificate.
    func startKamailio(tls: TestCertificates? = nil) throws {
        let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Tests/SIPPluginTests/Resources/kamailio.cfg.template").standardized
        let modules = ["/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/aarch64-linux-gnu/kamailio/modules"]
            .first { FileManager.default.fileExists(atPath: "\($0)/registrar.so") }
        guard let modules else { throw BenchError("Kamailio modules not found (install kamailio)") }
        let config = try String(contentsOf: template, encoding: .utf8)
            .replacingOccurrences(of: "@ADDR@", with: Self.registrarAddress)
            .replacingOccurrences(of: "@PORT@", with: "\(Self.port)")
            .replacingOccurrences(of: "@DIR@", with: directory.path)
            .replacingOccurrences(of: "@AUTH_ALGORITHM@", with: "")
            .replacingOccurrences(of: "@MODULES@", with: modules)
            .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("[::1]") }
            .joined(separator: "\n")
        let database = directory.appendingPathComponent("db")
        try? FileManager.default.removeItem(at: database)
        try FileManager.default.createDirectory(at: database, withIntermediateDirectories: true)
        for table in ["version", "presentity", "active_watchers", "watchers", "xcap", "pua"] {
            try FileManager.default.copyItem(
                atPath: "/usr/share/kamailio/dbtext/kamailio/\(table)",
                toPath: database.appendingPathComponent(table).path)
        }
        let path = directory.appendingPathComponent("kamailio.cfg").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        try tls?.kamailioConfig().write(
            to: directory.appendingPathComponent("tls.cfg"), atomically: true, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: controlSocket)
        try start(
            in: registrarNamespace,
            [
                "/usr/sbin/kamailio", "-f", path, "-w", directory.path, "-P", directory.path + "/kamailio.pid",
                // 256 MB of shared memory: 32 MB runs out near 2,000 bindings (`scale 1000` keeps
                // sipp's and netres's users bound at once).
                "-Y", directory.path, "-DD", "-E", "-m", "256", "-M", "8",
            ] + (tls == nil ? [] : ["-A", "WITH_TLS"]), output: kamailioLog)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if FileManager.default.fileExists(atPath: controlSocket) { return }
            usleep(50_000)
        }
        throw BenchError("Kamailio did not come up within 10 s; see \(kamailioLog)")
    }

    /// Starts baresip 1.0 headless (foreground; modules g711, account, menu, ctrl_tcp) in the
    /// client namespace, registering `user` (password `secret-USER`) every 600 s.
    @discardableResult
    func startBaresip(user: String) throws -> Spawned {
        let config = directory.appendingPathComponent("baresip")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
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

        """.write(to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        try "<sip:\(user)@\(Self.registrarAddress):\(Self.port);transport=udp>;auth_pass=secret-\(user);regint=600\n"
            .write(to: config.appendingPathComponent("accounts"), atomically: true, encoding: .utf8)
        return try start(
            in: clientNamespace, ["/usr/bin/baresip", "-f", config.path],
            output: directory.appendingPathComponent("baresip.log").path)
    }

    /// Datagrams the kernel dropped so far on the registrar's UDP sockets (the `drops` column of
    /// `/proc/net/udp` in its namespace, summed over every socket on port 5060).
    func registrarDrops() throws -> Int {
        let output = directory.appendingPathComponent("udp.txt").path
        try shell("ip netns exec \(registrarNamespace) cat /proc/net/udp > \(output)")
        let port = String(format: ":%04X", Self.port)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").dropFirst().reduce(0) { sum, line in
            let fields = line.split(separator: " ")
            guard fields.count > 2, fields[1].hasSuffix(port), let drops = Int(fields.last ?? "") else { return sum }
            return sum + drops
        }
    }

    /// Takes the client link down for `seconds`, then up again with its default route; returns
    /// the CLOCK_REALTIME instant read just before the link came up.
    func flapClientLink(downSeconds seconds: UInt32) throws -> Double {
        try shell("ip -n \(clientNamespace) link set nrc0 down")
        sleep(seconds)
        let upAt = realtimeNow()
        try shell(
            "ip -n \(clientNamespace) link set nrc0 up && "
                + "ip -n \(clientNamespace) route replace default via \(Self.registrarAddress)")
        return upAt
    }

    /// Runs `kamcmd ul.dump` (a unix socket: reachable from any namespace) and returns the
    /// `Address:` lines, i.e. the Contacts bound now.
    func boundContacts() throws -> [String] {
        let output = directory.appendingPathComponent("uldump.txt").path
        try? FileManager.default.removeItem(atPath: output)
        let child = try Spawned(["/usr/sbin/kamcmd", "-s", "unix:\(controlSocket)", "ul.dump"], output: output)
        _ = try child.wait()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("Address: ") ? String(trimmed.dropFirst(9)) : nil
        }
    }

    /// One `NRTEST` line of the registrar's script log.
    struct LogLine {
        var kind: String  // the method, or "REGISTERED" (logged right after the 200 OK was sent)
        var user: String
        var contact: String
        var realtime: Double  // CLOCK_REALTIME seconds, from Kamailio's $TV(Sn)
    }

    /// Every `NRTEST` line Kamailio has logged so far.
    func registrarLog() -> [LogLine] {
        let text = (try? String(contentsOfFile: kamailioLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line -> LogLine? in
            guard let range = line.range(of: "NRTEST ") else { return nil }
            let words = line[range.upperBound...].split(separator: " ")
            func field(_ name: String) -> String {
                words.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) } ?? ""
            }
            guard let kind = words.first, let at = Double(field("at")) else { return nil }
            return LogLine(kind: String(kind), user: field("user"), contact: field("contact"), realtime: at)
        }
    }

    /// Runs `ip -batch` in the client namespace on a FIFO: writes `first`, waits `gap`, writes
    /// `second`, closes the FIFO and waits for `ip` to exit 0 (it exits at end of input). The FIFO
    /// is opened non-blocking, retried for at most 5 s, so a failed `ip` cannot hang the bench.
    func ipBatch(_ first: [String], then gap: Duration, _ second: [String]) throws {
        let fifo = directory.appendingPathComponent("ip-batch.fifo").path
        unlink(fifo)
        guard mkfifo(fifo, 0o600) == 0 else { throw BenchError("mkfifo \(fifo) failed") }
        defer { unlink(fifo) }
        let child = try Spawned(["/usr/sbin/ip", "-n", clientNamespace, "-batch", fifo])
        var fd: Int32 = -1
        for _ in 0..<250 where fd < 0 {
            fd = open(fifo, O_WRONLY | O_NONBLOCK)
            if fd < 0 { usleep(20_000) }
        }
        guard fd >= 0 else {
            child.stop()
            throw BenchError("ip -batch did not open \(fifo) within 5 s")
        }
        func write(_ lines: [String]) {
            let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }
        write(first)
        let components = gap.components
        usleep(UInt32(components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000))
        write(second)
        close(fd)
        let status = try child.wait()
        guard status == 0 else { throw BenchError("ip -batch exited \(status)") }
    }

    /// Kills every process the lab started, by PID, then deletes both namespaces.
    func tearDown() {
        for child in processes.reversed() { child.stop() }
        processes.removeAll()
        if namespacesCreated {
            try? shell("ip netns delete \(registrarNamespace); ip netns delete \(clientNamespace)")
            namespacesCreated = false
        }
    }
}

/// CLOCK_REALTIME now, in seconds: the clock Kamailio stamps its log lines with (same host).
func realtimeNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
