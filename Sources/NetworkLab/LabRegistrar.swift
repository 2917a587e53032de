import Foundation
import Glibc

/// Kamailio as the lab's registrar and presence server, in a host of its own, on
/// ``LabAddress/service4`` and ``LabAddress/service6``, port 5060 (UDP and TCP).
///
/// Invariants: user U authenticates with password `secret-U`; bindings live in memory, so a
/// restart forgets them; the request log keeps growing across restarts; the process is the lab's
/// child and goes with it (``NetworkLab/shutdown()``, or the garbage collection of a dead owner).
public actor LabRegistrar {
    public nonisolated let lab: NetworkLab
    public nonisolated let host: LabHost
    public nonisolated let port = 5060
    /// The registrar's IPv4 address, reached from every client link through its default route.
    public nonisolated let address = LabAddress.service4
    nonisolated let directory: String
    var pid: pid_t?

    /// Kamailio, kamcmd, its modules and its db_text tables are installed.
    public static var isInstalled: Bool {
        kamailio != nil && kamcmd != nil && modules != nil
            && FileManager.default.fileExists(atPath: "\(tables)/presentity")
    }
    static let kamailio = LabCommand.executable("kamailio")
    static let kamcmd = LabCommand.executable("kamcmd")
    static let modules = [
        "/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/aarch64-linux-gnu/kamailio/modules",
        "/usr/lib64/kamailio/modules", "/usr/lib/kamailio/modules", "/usr/local/lib64/kamailio/modules",
    ].first { FileManager.default.fileExists(atPath: "\($0)/registrar.so") }
    static let tables = "/usr/share/kamailio/dbtext/kamailio"

    /// The file Kamailio logs to (its request log is the `NRTEST` lines).
    public nonisolated var logPath: String { directory + "/kamailio.log" }
    nonisolated var controlSocket: String { directory + "/ctl.sock" }

    init(lab: NetworkLab, host: LabHost, directory: String) throws {
        guard Self.isInstalled, let modules = Self.modules else {
            throw NetworkLabError(
                .unsupported,
                "the registrar needs Kamailio with presence modules (Debian kamailio,"
                    + " kamailio-presence-modules)", seed: lab.seed)
        }
        self.lab = lab
        self.host = host
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = RegistrarConfig.template.replacingOccurrences(of: "@ADDR4@", with: LabAddress.service4)
            .replacingOccurrences(of: "@ADDR6@", with: LabAddress.service6).replacingOccurrences(
                of: "@PORT@", with: "5060"
            )
            .replacingOccurrences(of: "@DIR@", with: directory).replacingOccurrences(of: "@MODULES@", with: modules)
        try config.write(toFile: directory + "/kamailio.cfg", atomically: true, encoding: .utf8)
    }

    /// Whether Kamailio runs now.
    public var isRunning: Bool { pid != nil }

    /// Starts Kamailio with empty bindings and fresh presence tables, and waits (≤ 10 s) until its
    /// control socket answers; fails with the end of its log when it does not come up.
    public func start() async throws {
        guard pid == nil, let kamailio = Self.kamailio else { return }
        // Fresh tables each start: 5.6.3 saves pua_reginfo rows its next start refuses to load.
        let db = directory + "/db"
        try? FileManager.default.removeItem(atPath: db)
        try FileManager.default.createDirectory(atPath: db, withIntermediateDirectories: true)
        for table in ["version", "presentity", "active_watchers", "watchers", "xcap", "pua"] {
            try FileManager.default.copyItem(atPath: "\(Self.tables)/\(table)", toPath: "\(db)/\(table)")
        }
        let started = try await lab.spawn(
            in: host,
            [
                kamailio, "-f", directory + "/kamailio.cfg", "-w", directory, "-P", directory + "/kamailio.pid", "-Y",
                directory, "-DD", "-E", "-m", "32", "-M", "4",
            ], output: logPath)
        pid = started
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if await lab.exitStatus(of: started) != nil { break }
            if FileManager.default.fileExists(atPath: controlSocket), (try? await kamcmd(["core.uptime"])) != nil {
                await lab.record("registrar started", backend: .kamailio)
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        await lab.stop(started)
        pid = nil
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw NetworkLabError(
            .timedOut, "Kamailio did not come up within 10 s:\n\(log.suffix(1500))", seed: lab.seed)
    }

    /// Stops Kamailio (SIGTERM, SIGKILL to its group after 3 s); its bindings are gone.
    public func stop() async {
        guard let running = pid else { return }
        pid = nil
        await lab.stop(running)
        try? FileManager.default.removeItem(atPath: controlSocket)
        await lab.record("registrar stopped", backend: .kamailio)
    }

    /// ``stop()``, then ``start()``: the registrar comes back with no bindings.
    public func restart() async throws {
        await stop()
        try await start()
    }

    /// Runs `kamcmd` against this registrar's control socket; its output.
    @discardableResult
    public func kamcmd(_ arguments: [String]) async throws -> String {
        guard let kamcmd = Self.kamcmd else { throw NetworkLabError(.unsupported, "kamcmd is missing", seed: lab.seed) }
        return try await lab.run(in: host, [kamcmd, "-s", "unix:\(controlSocket)"] + arguments, timeout: .seconds(5))
    }

    /// The bindings now (`kamcmd ul.dump`): address of record and Contact of each.
    public func bindings() async throws -> [RegistrarBinding] {
        RegistrarBinding.parse(dump: try await kamcmd(["ul.dump"]))
    }

    /// Every request the registrar has seen so far (across restarts), in order.
    public nonisolated func requests() -> [RegistrarRequest] {
        RegistrarRequest.parse(log: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }

    /// Arms a SIP-aware fault for the next matching request(s).
    public func inject(_ fault: RegistrarFault) async throws {
        switch fault {
        case .serviceUnavailable(let retryAfter, let count):
            try await kamcmd(["htable.seti", "faults", "retryafter", "\(max(0, min(retryAfter, 86_400)))"])
            try await kamcmd(["htable.seti", "faults", "unavailable", "\(max(0, min(count, 1_000_000)))"])
        case .dropNextRegisterOK: try await kamcmd(["htable.seti", "faults", "drop200", "1"])
        case .reject481NextInDialog: try await kamcmd(["htable.seti", "faults", "reject481", "1"])
        }
        await lab.record("\(fault) armed", backend: .kamailio)
    }
}

/// A fault the registrar plays on the wire, armed through Kamailio's `faults` htable.
public enum RegistrarFault: Sendable, CustomStringConvertible {
    /// The next `count` REGISTERs get 503 with `Retry-After: retryAfter` (seconds, clamped to a day).
    case serviceUnavailable(retryAfter: Int, count: Int)
    /// The next authenticated REGISTER updates the binding but its 200 OK is never sent.
    case dropNextRegisterOK
    /// The next in-dialog request (one with a To tag: a SUBSCRIBE refresh, a re-INVITE) gets 481.
    case reject481NextInDialog

    public var description: String {
        switch self {
        case .serviceUnavailable(let retryAfter, let count): "503 Retry-After \(retryAfter) x\(count)"
        case .dropNextRegisterOK: "drop the next REGISTER's 200 OK"
        case .reject481NextInDialog: "481 to the next in-dialog request"
        }
    }
}

extension NetworkLab {
    /// Starts Kamailio in `host`, which gets the registrar's service addresses on its loopback.
    public func startRegistrar(in host: LabHost) async throws -> LabRegistrar {
        try await addServiceAddresses(to: host)
        let registrar = try LabRegistrar(lab: self, host: host, directory: directory + "/registrar-\(host.name)")
        try await registrar.start()
        return registrar
    }
}
