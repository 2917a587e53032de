import ChildProcesses
import Foundation
import Glibc

/// A registrar namespace (Kamailio from the SIP tests' template on 198.18.0.1:5060, veth `nrr0`)
/// and a client namespace (veth `nrc0`, 198.18.0.2/24, default route via 198.18.0.1), for SIP
/// fault tests whose client runs as a separate process inside the client namespace.
///
/// Invariants: only 198.18.0.0/15 addresses; every process started here is stopped by PID in
/// `stop()` (SIGTERM, SIGKILL to its group after 3 s), which `deinit` also calls; the namespaces
/// (and the veth pair with them) are deleted by ``NetworkNamespace``'s `deinit`. Kamailio can be
/// stopped and started again (`stopRegistrar()`, `startRegistrar()`): a stopped one is gone with
/// its whole process group, and its script log keeps growing in the same file across restarts.
final class RegistrarLab: @unchecked Sendable {
    // @unchecked: `children` and `registrarPID` are only touched by the one test that owns the
    // lab, serially.
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
    /// The running Kamailio (the `ip netns exec` child execs it), nil while stopped.
    private var registrarPID: pid_t?
    var log: String { directory.appendingPathComponent("kamailio.log").path }
    var controlSocket: String { directory.appendingPathComponent("ctl.sock").path }

    /// The registrar's TLS listener (198.18.0.1:5061), when the lab has one.
    let tls: RegistrarTLS?

    /// - Parameter tls: adds a TLS listener on 5061 with a server certificate of that kind, from
    ///   a CA generated for this lab (see ``RegistrarTLS``).
    init(tls: RegistrarTLS.ServerCertificate? = nil) throws {
        let folder = directory.path
        self.tls = try tls.map { try RegistrarTLS(directory: folder, server: $0) }
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
        try config.write(
            toFile: directory.appendingPathComponent("kamailio.cfg").path, atomically: true, encoding: .utf8)
        try spawnRegistrar()
    }

    /// Starts Kamailio with the lab's config and empty presence tables (no wait; see
    /// ``waitForRegistrar()``). Fresh tables each time: Kamailio 5.6.3 saves pua_reginfo's
    /// presentity rows with a null its next start refuses to load ("null value not allowed"),
    /// and then presence, and the whole server, fails to start.
    private func spawnRegistrar() throws {
        let path = directory.path
        let db = directory.appendingPathComponent("db")
        try? FileManager.default.removeItem(at: db)
        try FileManager.default.createDirectory(at: db, withIntermediateDirectories: true)
        for table in ["version", "presentity", "active_watchers", "watchers", "xcap", "pua"] {
            try FileManager.default.copyItem(atPath: "\(Self.tables)/\(table)", toPath: db.path + "/" + table)
        }
        registrarPID = try start(
            in: registrar,
            [
                Self.kamailio, "-f", path + "/kamailio.cfg", "-w", path, "-P", path + "/kamailio.pid", "-Y", path,
                "-DD", "-E", "-m", "32", "-M", "4",
            ] + (tls == nil ? [] : ["-A", "WITH_TLS"]), output: log)
    }

    /// Waits (≤ 10 s, without blocking a thread of the test pool) until Kamailio answers on its
    /// control socket (`kamcmd core.uptime`): the socket file appears before it is served. Fails
    /// at once, with the end of its log, when Kamailio exits.
    func waitForRegistrar() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            if let pid = registrarPID, waitpid(pid, &status, WNOHANG) == pid {
                registrarPID = nil
                children.removeAll { $0 == pid }
                break
            }
            if FileManager.default.fileExists(atPath: controlSocket),
                (try? await run(in: registrar, [Self.kamcmd, "-s", "unix:\(controlSocket)", "core.uptime"]))?.status
                    == 0
            {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw NetworkNamespace.CommandFailed(
            description: "Kamailio did not come up (exited, or no answer within 10 s):\n\(output.suffix(1500))")
    }

    /// A lab whose registrar is up.
    static func running(tls: RegistrarTLS.ServerCertificate? = nil) async throws -> RegistrarLab {
        let lab = try RegistrarLab(tls: tls)
        try await lab.waitForRegistrar()
        return lab
    }

    /// A running lab with the `netres run` of `user` started and bound at the registrar (≤ 10 s).
    static func registered(
        _ user: String, transport: String = "udp", account: [String] = [],
        tls: RegistrarTLS.ServerCertificate? = nil
    ) async throws -> RegistrarLab {
        let lab = try await running(tls: tls)
        let pid = try lab.startClient(
            user: user, config: try lab.writeDaemonConfig(user: user, transport: transport, account: account))
        var status: Int32 = 0
        var exited = false
        let bound = await waitUntil(seconds: 10) {
            exited = exited || waitpid(pid, &status, WNOHANG) == pid
            return exited || !lab.lines("REGISTERED", user: user).isEmpty
        }
        if exited { lab.children.removeAll { $0 == pid } }
        guard bound, !exited else {
            let output = (try? String(contentsOfFile: lab.clientOutput(of: user), encoding: .utf8)) ?? ""
            throw NetworkNamespace.CommandFailed(
                description: "\(user) was not registered within 10 s"
                    + (exited ? "; netres exited with status \(status): \(output.suffix(1000))" : ""))
        }
        return lab
    }

    /// Takes the client's link down for `downtime`, then brings it up with its default route
    /// back; the realtime instants just before it went down and just before it came up.
    func flapClientLink(downFor downtime: Duration = .seconds(2)) async throws -> (down: Double, up: Double) {
        let downAt = realtime()
        try client.ip("link set nrc0 down")
        try await Task.sleep(for: downtime)
        let upAt = realtime()
        try client.batch(["link set nrc0 up", "route replace default via 198.18.0.1"])
        return (downAt, upAt)
    }

    /// Stops Kamailio by PID (SIGTERM; SIGKILL to its group after 3 s) and returns once its whole
    /// process group is gone, so its ports are free; removes its control socket and PID file.
    func stopRegistrar() async {
        guard let pid = registrarPID else { return }
        registrarPID = nil
        children.removeAll { $0 == pid }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        if !(await waitUntil(seconds: 3) { waitpid(pid, &status, WNOHANG) != 0 }) {
            kill(-pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
        }
        // Kamailio's own children share its process group; none may outlive it.
        if !(await waitUntil(seconds: 3) { kill(-pid, 0) != 0 && errno == ESRCH }) { kill(-pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: controlSocket)
        try? FileManager.default.removeItem(atPath: directory.path + "/kamailio.pid")
    }

    /// Starts Kamailio again with the same config and waits for its control socket. Its
    /// bindings (usrloc db_mode 0) start empty.
    func startRegistrar() async throws {
        precondition(registrarPID == nil, "the registrar is already running")
        try spawnRegistrar()
        try await waitForRegistrar()
    }

    /// ``stopRegistrar()`` then ``startRegistrar()``.
    func restartRegistrar() async throws {
        await stopRegistrar()
        try await startRegistrar()
    }

    deinit { stop() }

    /// Starts `argv` under `ip netns exec` with stdout and stderr appended to `output`; its PID
    /// (which `stop()` ends).
    @discardableResult
    func start(in namespace: NetworkNamespace, _ argv: [String], output: String) throws -> pid_t {
        let ip = NetworkNamespace.ipPath ?? "/usr/sbin/ip"
        let pid = try ChildProcess([ip, "netns", "exec", namespace.name] + argv, output: output, newProcessGroup: true)
            .pid
        children.append(pid)
        return pid
    }

    /// Stops every child by PID, newest first, and Kamailio last (clients unregister on SIGTERM).
    func stop() {
        let registrarLast = children.reversed().filter { $0 != registrarPID } + (registrarPID.map { [$0] } ?? [])
        for pid in registrarLast {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            if !blockingWait(seconds: 3, { waitpid(pid, &status, WNOHANG) != 0 }) {
                kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
            }
        }
        children.removeAll()
        registrarPID = nil
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `argv` in `namespace` to completion (≤ 5 s, SIGKILL after); its exit status and output.
    func run(in namespace: NetworkNamespace, _ argv: [String]) async throws -> (status: Int32, output: String) {
        let output = directory.appendingPathComponent("run-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let pid = try start(in: namespace, argv, output: output)
        children.removeAll { $0 == pid }
        var status: Int32 = 0
        guard await waitUntil(seconds: 5, { waitpid(pid, &status, WNOHANG) != 0 }) else {
            kill(-pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            throw NetworkNamespace.CommandFailed(description: "\(argv.joined(separator: " ")) timed out")
        }
        return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    /// Writes a `netres run` config for `user` (password `secret-USER`, hold-down 0, only `nrc0`,
    /// JSON log, control socket ``controlSocket(of:)``, state directory in the lab's folder; port
    /// 5060, left to its 5061 default over TLS) into the lab's folder and returns its path.
    /// `account` holds extra lines of the account (`subscriptions:` ...), indented by 4 spaces.
    func writeDaemonConfig(user: String, transport: String = "udp", account: [String] = []) throws -> String {
        let path = directory.appendingPathComponent("netres-\(user).yaml").path
        let extra = account.map { "    " + $0 + "\n" }.joined()
        try """
        log-format: json
        control-socket: \(controlSocket(of: user))
        interfaces: [nrc0]
        hold-down: 0
        state-directory: \(directory.appendingPathComponent("state").path)
        accounts:
          - name: \(user)
            registrar: 198.18.0.1
            \(transport == "tls" ? "# port: 5061 by default" : "port: 5060")
            transport: \(transport)
            user: \(user)
            domain: 198.18.0.1
            password: secret-\(user)

        """.appending(extra).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The control socket of the `netres run` of `user` (``writeDaemonConfig(user:transport:account:)``).
    func controlSocket(of user: String) -> String { directory.appendingPathComponent("netres-\(user).sock").path }

    /// Where the `netres run` of `user` writes its standard output and error.
    /// Forgets a child the test reaped itself, so `stop()` does not signal its PID again.
    func forget(_ pid: pid_t) { children.removeAll { $0 == pid } }

    func clientOutput(of user: String) -> String { directory.appendingPathComponent("netres-\(user).out").path }

    /// Starts `netres run --config CONFIG` for `user` in the client namespace; its PID.
    @discardableResult
    func startClient(user: String, config: String) throws -> pid_t {
        try start(in: client, [Self.netres, "run", "--config", config], output: clientOutput(of: user))
    }

    /// One `action` line of a `netres run` JSON log.
    struct ActionLine {
        /// The trigger the action was decided on, e.g. `network.restored`.
        var event: String
        var service: String
        var action: String
        var attempt: Int
        var outcome: String
        var error: String?
    }

    /// The `kind: action` lines `netres run` of `user` has logged so far, in order.
    func actionLog(of user: String) -> [ActionLine] {
        let text = (try? String(contentsOfFile: clientOutput(of: user), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["kind"] as? String == "action", let service = object["service"] as? String,
                let action = object["action"] as? String, let outcome = object["outcome"] as? String
            else { return nil }
            return ActionLine(
                event: object["event"] as? String ?? "", service: service, action: action,
                attempt: object["attempt"] as? Int ?? 0, outcome: outcome,
                error: object["error"] as? String)
        }
    }

    /// One `NRTEST <kind> user=<user> name=value ... at=<realtime>` line of the registrar's script log.
    struct ScriptLine {
        var fields: [String: String]
        var at: Double
        var contact: String { fields["contact"] ?? "" }
    }

    /// The registrar's script log lines of `kind` (a method, or `REGISTERED`) from `user`.
    func lines(_ kind: String, user: String) -> [ScriptLine] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "NRTEST \(kind) user=\(user) ") else { return nil }
            var fields: [String: String] = [:]
            for word in line[range.lowerBound...].split(separator: " ") {
                guard let equals = word.firstIndex(of: "=") else { continue }
                fields[String(word[..<equals])] = String(word[word.index(after: equals)...])
            }
            return ScriptLine(fields: fields, at: fields["at"].flatMap(Double.init) ?? 0)
        }
    }

    /// The Contacts bound now (`kamcmd ul.dump`, `Address:` lines).
    func boundContacts() async throws -> [String] {
        let (status, text) = try await run(in: registrar, [Self.kamcmd, "-s", "unix:\(controlSocket)", "ul.dump"])
        guard status == 0 else { throw NetworkNamespace.CommandFailed(description: "kamcmd ul.dump: \(text)") }
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
