import Foundation
import Glibc

/// A registrar namespace (Kamailio from the SIP tests' template on 198.18.0.1:5060, veth `nrr0`)
/// and a client namespace (veth `nrc0`, 198.18.0.2/24, default route via 198.18.0.1), for SIP
/// fault tests whose client runs as a separate process inside the client namespace.
///
/// Invariants: only 198.18.0.0/15 addresses; every process started here is stopped by PID in
/// `stop()` (SIGTERM, SIGKILL to its group after 3 s), which `deinit` also calls; the namespaces
/// (and the veth pair with them) are deleted by ``NetworkNamespace``'s `deinit`.
final class RegistrarLab: @unchecked Sendable {
    // @unchecked: `children` is only touched by the one test that owns the lab, serially.
    static let kamailio = "/usr/sbin/kamailio"
    static let kamcmd = "/usr/sbin/kamcmd"
    static let modules = ["/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/aarch64-linux-gnu/kamailio/modules"]
        .first { FileManager.default.fileExists(atPath: "\($0)/registrar.so") }
    static let tables = "/usr/share/kamailio/dbtext/kamailio"
    static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: kamailio) && FileManager.default.isExecutableFile(atPath: kamcmd)
            && modules != nil && FileManager.default.fileExists(atPath: "\(tables)/presentity")
    }
    /// The built `netres`, run in the client namespace as `netres run --config FILE`.
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path

    let registrar: NetworkNamespace
    let client: NetworkNamespace
    let directory = URL(fileURLWithPath: "/tmp/nr-sipfault-\(UInt32.random(in: 0...UInt32.max))")
    private var children: [pid_t] = []
    var log: String { directory.appendingPathComponent("kamailio.log").path }

    init() throws {
        registrar = try NetworkNamespace()
        client = try NetworkNamespace()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try NetworkNamespace.run(
            [
                "link", "add", "nrr0", "netns", registrar.name, "type", "veth", "peer", "name", "nrc0", "netns",
                client.name,
            ])
        try registrar.ip("addr add 198.18.0.1/24 dev nrr0")
        try client.ip("addr add 198.18.0.2/24 dev nrc0")
        try client.sysctl("net.ipv4.conf.all.promote_secondaries=1")
        try registrar.ip("link set nrr0 up")
        try client.ip("link set nrc0 up")
        try client.ip("route add default via 198.18.0.1")
        let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../SIPPluginTests/Resources/kamailio.cfg.template").standardized
        let config = try String(contentsOf: template, encoding: .utf8)
            .replacingOccurrences(of: "@ADDR@", with: "198.18.0.1").replacingOccurrences(of: "@PORT@", with: "5060")
            .replacingOccurrences(of: "@DIR@", with: directory.path).replacingOccurrences(
                of: "@AUTH_ALGORITHM@", with: ""
            )
            .replacingOccurrences(of: "@MODULES@", with: Self.modules ?? "")
            .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("[::1]") }
            .joined(separator: "\n")
        let db = directory.appendingPathComponent("db")
        try FileManager.default.createDirectory(at: db, withIntermediateDirectories: true)
        for table in ["version", "presentity", "active_watchers", "watchers", "xcap", "pua"] {
            try FileManager.default.copyItem(atPath: "\(Self.tables)/\(table)", toPath: db.path + "/" + table)
        }
        let path = directory.appendingPathComponent("kamailio.cfg").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        try start(
            in: registrar,
            [
                Self.kamailio, "-f", path, "-w", directory.path, "-P", directory.path + "/kamailio.pid", "-Y",
                directory.path,
            ]
                + ["-DD", "-E", "-m", "32", "-M", "4"], output: log)
    }

    /// Waits (≤ 10 s, without blocking a thread of the test pool) for Kamailio's control socket.
    func waitForRegistrar() async throws {
        let socket = directory.appendingPathComponent("ctl.sock").path
        guard await waitUntil(seconds: 10, { FileManager.default.fileExists(atPath: socket) }) else {
            throw NetworkNamespace.CommandFailed(description: "Kamailio did not come up within 10 s")
        }
    }

    deinit { stop() }

    /// Starts `argv` under `ip netns exec` with stdout and stderr appended to `output`.
    func start(in namespace: NetworkNamespace, _ argv: [String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The test runner's threads block signals; the children must see SIGTERM.
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))
        let ip = NetworkNamespace.ipPath ?? "/usr/sbin/ip"
        let args = ([ip, "netns", "exec", namespace.name] + argv).map { strdup($0) } + [nil]
        defer { args.forEach { free($0) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, ip, &actions, &attributes, args, environ)
        guard result == 0 else { throw NetworkNamespace.CommandFailed(description: "spawn \(argv[0]): \(result)") }
        children.append(pid)
    }

    /// Stops every child by PID, newest first.
    func stop() {
        for pid in children.reversed() {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            if !blockingWait(seconds: 3, { waitpid(pid, &status, WNOHANG) != 0 }) {
                kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
            }
        }
        children.removeAll()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes a `netres run` config for `user` (password `secret-USER`, hold-down 0, only `nrc0`)
    /// into the lab's folder and returns its path.
    func writeDaemonConfig(user: String) throws -> String {
        let path = directory.appendingPathComponent("netres-\(user).yaml").path
        try """
        log-format: json
        control-socket: \(directory.path)/netres-\(user).sock
        interfaces: [nrc0]
        hold-down: 0
        accounts:
          - name: \(user)
            registrar: 198.18.0.1
            port: 5060
            transport: udp
            user: \(user)
            domain: 198.18.0.1
            password: secret-\(user)

        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `NRTEST <kind> user=<user> ... at=<realtime>` lines of the registrar's script log.
    func lines(_ kind: String, user: String) -> [(contact: String, at: Double)] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.contains("NRTEST \(kind) user=\(user) ") }.map { line in
            let words = line.split(separator: " ")
            let contact = words.first { $0.hasPrefix("contact=") }.map(String.init) ?? ""
            let at = words.last.flatMap { Double($0.dropFirst(3)) } ?? 0
            return (contact, at)
        }
    }

    /// The Contacts bound now (`kamcmd ul.dump`, `Address:` lines).
    func boundContacts() async throws -> [String] {
        let output = directory.appendingPathComponent("uldump-\(UInt32.random(in: 0...UInt32.max))").path
        try start(in: registrar, [Self.kamcmd, "-s", "unix:\(directory.path)/ctl.sock", "ul.dump"], output: output)
        let pid = children.removeLast()
        var status: Int32 = 0
        guard await waitUntil(seconds: 5, { waitpid(pid, &status, WNOHANG) != 0 }) else {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            throw NetworkNamespace.CommandFailed(description: "kamcmd ul.dump timed out")
        }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("Address: ") }.map { String($0.dropFirst(9)) }
    }
}

/// CLOCK_REALTIME in seconds: what Kamailio's `$TV(Sn)` stamps (same host).
func realtime() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Polls `condition` every 20 ms for at most `seconds`, sleeping the task (the test pool has
/// only as many threads as cores: a blocked thread stalls unrelated tests); whether it held.
func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// The blocking form, for `deinit` and `stop()` only (children exit on SIGTERM within milliseconds).
func blockingWait(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
