import Foundation
import Glibc

/// Kamailio as the lab's registrar and presence server: in a host of its own, on
/// ``LabAddress/service4`` and ``LabAddress/service6``, port 5060 (UDP and TCP), or on loopback
/// (``onLoopback(port:options:)``) for tests without namespaces.
///
/// Invariants: user U authenticates with password `secret-U`; bindings live in memory, so a
/// restart forgets them; the request log keeps growing across restarts; in a host the process is
/// the lab's child and goes with it (``NetworkLab/shutdown()``, or the garbage collection of a dead
/// owner); on loopback it is this registrar's, stopped by ``stop()`` or `deinit`, and its folder is
/// named like a lab's, so a new lab (or `netres lab gc`) removes what a killed owner left.
public actor LabRegistrar {
    /// The lab whose host runs Kamailio; nil on loopback.
    public nonisolated var lab: NetworkLab? { placement.lab }
    /// The host Kamailio runs in; nil on loopback.
    public nonisolated var host: LabHost? { placement.host }
    /// The SIP port (UDP and TCP); 5060 in a lab host.
    public nonisolated let port: Int
    /// The registrar's IPv4 address: in a lab, reached from every client link through its default
    /// route; on loopback `127.0.0.1`.
    public nonisolated let address: String
    nonisolated let placement: RegistrarPlacement
    nonisolated let directory: String
    /// Started with `-A WITH_TLS`: a TLS listener on ``RegistrarOptions/tlsPort``.
    nonisolated let usesTLS: Bool
    /// Whether it is also a push proxy (``RegistrarOptions/pushService``): msilo's table is written.
    nonisolated let isPushProxy: Bool
    /// `-m`/`-M` (``RegistrarOptions/sharedMemoryMegabytes``).
    nonisolated let memoryArguments: [String]
    /// rtpengine beside Kamailio (``RegistrarOptions/mediaRelay``), nil without one.
    public nonisolated let relay: LabMediaRelay?
    var pid: pid_t?
    var relayPID: pid_t?

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
    nonisolated var seed: UInt64 { placement.lab?.seed ?? 0 }

    init(
        placement: RegistrarPlacement, address4: String, address6: String?, port: Int, directory: String,
        options: RegistrarOptions
    ) throws {
        let seed = placement.lab?.seed ?? 0
        guard Self.isInstalled, let modules = Self.modules else {
            throw NetworkLabError(
                .unsupported,
                "the registrar needs Kamailio with presence modules (Debian kamailio,"
                    + " kamailio-presence-modules)", seed: seed)
        }
        guard RegistrarOptions.digestAlgorithms.contains(options.digestAlgorithm) else {
            throw NetworkLabError(
                .invalidRequest, "digest algorithm \(LabText.quoted(options.digestAlgorithm)): want MD5 or SHA-256",
                seed: seed)
        }
        if options.tlsConfiguration != nil, !FileManager.default.fileExists(atPath: modules + "/tls.so") {
            throw NetworkLabError(
                .unsupported, "a TLS registrar needs Kamailio's tls module (Debian kamailio-tls-modules)", seed: seed)
        }
        if options.mediaRelay {
            guard placement.host != nil, LabMediaRelay.isInstalled else {
                throw NetworkLabError(
                    .unsupported, "a media relay needs a lab host and rtpengine (Debian rtpengine, kamailio)",
                    seed: seed)
            }
        }
        relay = options.mediaRelay ? LabMediaRelay(address4: address4, address6: address6, directory: directory) : nil
        self.placement = placement
        self.address = address4
        self.port = port
        self.directory = directory
        usesTLS = options.tlsConfiguration != nil
        isPushProxy = options.pushService != nil
        if let service = options.pushService, !RegistrarOptions.isServiceAddress(service) {
            throw NetworkLabError(
                .invalidRequest, "push service \(LabText.quoted(service)): want IPV4:PORT", seed: seed)
        }
        memoryArguments = options.memoryArguments
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try options.tlsConfiguration?.write(toFile: directory + "/tls.cfg", atomically: true, encoding: .utf8)
        let config = RegistrarConfig.callReply(
            RegistrarConfig.withNAT(
                options.nat,
                RegistrarConfig.relay(
                    RegistrarConfig.render(
                        address4: address4, address6: address6, port: port, directory: directory, modules: modules,
                        digestAlgorithm: options.digestAlgorithm, recordRoute: options.recordRoute,
                        udpWorkers: options.udpWorkers, pushService: options.pushService),
                    control: relay?.controlSocket, behindNAT: options.nat != nil)),
            nat: options.nat != nil, relay: relay != nil)
        try config.write(toFile: directory + "/kamailio.cfg", atomically: true, encoding: .utf8)
    }

    deinit {
        guard case .loopback = placement else { return }
        if let pid {
            kill(-pid, SIGKILL)
            _ = LabCommand.blockingReap(pid)
        }
        try? FileManager.default.removeItem(atPath: directory)
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
        if isPushProxy { try RegistrarConfig.siloTable.write(toFile: db + "/silo", atomically: true, encoding: .utf8) }
        try await startRelay()
        let started = try await placement.spawn(
            [
                kamailio, "-f", directory + "/kamailio.cfg", "-w", directory, "-P", directory + "/kamailio.pid", "-Y",
                directory, "-DD", "-E",
            ] + memoryArguments + (usesTLS ? ["-A", "WITH_TLS"] : []), output: logPath)
        pid = started
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if await placement.hasExited(started) { break }
            if FileManager.default.fileExists(atPath: controlSocket), (try? await kamcmd(["core.uptime"])) != nil {
                await placement.record("registrar started")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        await placement.stop(started)
        pid = nil
        await stopRelay()
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        throw NetworkLabError(.timedOut, "Kamailio did not come up within 10 s:\n\(log.suffix(1500))", seed: seed)
    }

    /// Stops Kamailio (SIGTERM, SIGKILL to its group after 3 s); its bindings are gone, its port free.
    public func stop() async {
        guard let running = pid else { return }
        pid = nil
        await placement.stop(running)
        try? FileManager.default.removeItem(atPath: controlSocket)
        try? FileManager.default.removeItem(atPath: directory + "/kamailio.pid")
        await stopRelay()
        await placement.record("registrar stopped")
    }

    /// ``stop()``, then ``start()``: the registrar comes back on the same port with no bindings.
    public func restart() async throws {
        await stop()
        try await start()
    }

    /// Runs `kamcmd` against this registrar's control socket (≤ 5 s); its output.
    @discardableResult
    public func kamcmd(_ arguments: [String]) async throws -> String {
        guard let kamcmd = Self.kamcmd else { throw NetworkLabError(.unsupported, "kamcmd is missing", seed: seed) }
        return try await placement.run([kamcmd, "-s", "unix:\(controlSocket)"] + arguments, timeout: .seconds(5))
    }

    /// The bindings now (`kamcmd ul.dump`): address of record and Contact of each.
    public func bindings() async throws -> [RegistrarBinding] {
        RegistrarBinding.parse(dump: try await kamcmd(["ul.dump"]))
    }

    /// The Contacts bound now, of every address of record (``bindings()``).
    public func contacts() async throws -> [String] { try await bindings().map(\.contact) }

    /// Every request the registrar has seen so far (across restarts), in order.
    public nonisolated func requests() -> [RegistrarRequest] {
        RegistrarRequest.parse(log: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }

    /// How many client transactions of `method` from `user` reached the registrar after `instant`
    /// (``realtime()``; 0: since its first start): requests are counted by CSeq, so a UDP
    /// retransmission (same CSeq) is not a new one.
    public nonisolated func transactionCount(of method: String, from user: String, since instant: Double = 0) -> Int {
        let lines = requests().filter { $0.kind == method && $0.user == user && $0.at > instant }
        return Set(lines.map { $0.fields["cseq"] ?? "at=\($0.at)" }).count
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
        await placement.record("\(fault) armed")
    }
}

/// A fault the registrar plays on the wire, armed through Kamailio's `faults` htable.
public enum RegistrarFault: Sendable, CustomStringConvertible {
    /// The next `count` REGISTERs get 503 with `Retry-After: retryAfter` (seconds, clamped to a day;
    /// 0 sends no Retry-After, which RFC 3263 §4.3 reads as "try the next server").
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
    /// - Parameters:
    ///   - host: the lab host Kamailio runs in.
    ///   - options: the digest algorithm, memory, and a TLS listener (``RegistrarOptions``).
    public func startRegistrar(in host: LabHost, options: RegistrarOptions = .init()) async throws -> LabRegistrar {
        try await addServiceAddresses(to: host)
        let registrar = try LabRegistrar(
            placement: .host(self, host), address4: LabAddress.service4, address6: LabAddress.service6, port: 5060,
            directory: directory + "/registrar-\(host.name)", options: options)
        try await registrar.start()
        return registrar
    }
}
