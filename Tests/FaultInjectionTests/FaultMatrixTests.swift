import Foundation
import Glibc
import NetworkLab
import Testing

/// The fault matrix: every fault × app state, against the built `netres run` with one UDP and one
/// TCP account (reg, presence-others and message-summary subscriptions), a wifi link (and, for the
/// interface switch, a cellular one) and Kamailio. A cell passes when, after the fault:
/// - each account is bound exactly once, at wifi's current address, and its subscriptions are as
///   the policy allows in that state (``FaultMatrixProbe/divergence(state:)``);
/// - at most ``registerBound`` REGISTERs and ``requestBound`` requests per account reached the
///   registrar since the fault began (no storm);
/// - nothing was sent to the registrar while netlink showed the path down (an nft counter in the
///   phone, sampled with the link state) and, in `suspended`, nothing from suspending until the
///   cell resumes the app.
///
/// Suspended cells follow the platform: foreground → background → suspended, then the fault, then
/// a resume (`netres ctl state background`, which reports `resumed`). By policy a suspended app
/// runs nothing until it resumes (ARCHITECTURE.md, "Typical consequences of the default policy":
/// `resumed` refreshes), so those cells converge after the resume, not before.
///
/// The `call` column is the foreground with a call the UDP account placed to sipp before the
/// fault (``FaultMatrixCall``): it must end active, re-INVITEd once after the REGISTER when the
/// path or address changed, not at all otherwise.
///
/// With `FAULT_MATRIX_OUT=FILE` each cell appends `fault|state|pass|seconds|requests` to FILE
/// (`scripts/fault-matrix.sh` renders FAULT-MATRIX.md from it). Cells run at most
/// ``CellGate/width`` at a time: 30 labs at once (60 clients, 30 registrars) overrun a 2-core
/// machine and no cell registers at all.
@Suite(.needsNamespaces, .enabled(if: LabRegistrar.isInstalled, "needs kamailio"), .timeLimit(.minutes(10)))
struct FaultMatrixTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static let registerBound = 8
    static let requestBound = 24
    static let allStates = ["foreground", "background", "suspended", "call"]
    static let gate = CellGate()

    /// One `netres run` config with a UDP and a TCP account, each with reg, message-summary and
    /// presence-others subscriptions, starting in the foreground; its path.
    func config(_ lab: NetworkLab, users: [String], interfaces: [String]) throws -> String {
        let path = lab.directory + "/netres.yaml"
        var text = """
            interfaces: [\(interfaces.joined(separator: ", "))]
            hold-down: 0
            control-socket: \(lab.directory)/netres.sock
            state-directory: \(lab.directory)/state
            accounts:

            """
        for (user, transport) in zip(users, ["udp", "tcp"]) {
            text += """
                  - name: \(user)
                    registrar: \(LabAddress.service4)
                    domain: \(LabAddress.service4)
                    transport: \(transport)
                    user: \(user)
                    password: secret-\(user)
                    subscriptions:
                      - { package: reg }
                      - { package: message-summary }
                      - { package: presence-others, resource: "sip:buddy@\(LabAddress.service4)" }

                """
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The end of the client's log, for a failure message.
    func log(_ lab: NetworkLab) -> String {
        String(((try? String(contentsOfFile: lab.directory + "/netres.log", encoding: .utf8)) ?? "").suffix(1500))
    }

    /// Every cell, or with `FAULT_MATRIX_CELLS=name,name` (a cell's name or its start) only those:
    /// to replay one row.
    static var cells: [FaultMatrixCell] {
        guard let wanted = ProcessInfo.processInfo.environment["FAULT_MATRIX_CELLS"]?.split(separator: ",") else {
            return FaultMatrixCell.allCases
        }
        return FaultMatrixCell.allCases.filter { cell in wanted.contains { cell.rawValue.hasPrefix($0) } }
    }

    /// Every state column, or with `FAULT_MATRIX_STATES=name,name` only those (`call`: the call
    /// column alone).
    static var states: [String] {
        guard let wanted = ProcessInfo.processInfo.environment["FAULT_MATRIX_STATES"]?.split(separator: ",") else {
            return allStates
        }
        return allStates.filter { wanted.contains(Substring($0)) }
    }

    @Test(arguments: cells, states)
    func eachAccountEndsConvergedWithBoundedRequestsAndNothingSentWhileDown(
        cell: FaultMatrixCell, state: String
    ) async throws {
        try await Self.gate.run {
            try await withNetworkLab { lab in try await play(cell, in: state, lab: lab) }
        }
    }

    func play(_ cell: FaultMatrixCell, in state: String, lab: NetworkLab) async throws {
        let phone = try await lab.addHost("phone")
        let server = try await lab.addHost("server")
        let wifi = try await lab.connect(phone, to: server, as: "wifi")
        let cellular = cell.needsCellular ? try await lab.connect(phone, to: server, as: "cell", metric: 200) : nil
        let elsewhere = cell == .move ? try await lab.addHost("elsewhere") : nil
        let registrar = try await lab.startRegistrar(in: server)
        let users = [CallFaultLab.user, "tcpuser"]
        let probe = FaultMatrixProbe(lab: lab, phone: phone, wifi: wifi, registrar: registrar, users: users)
        try await probe.installCounter()
        let interfaces = cell.needsCellular ? ["wifi", "cell"] : ["wifi"]
        let debug = Self.keep == nil ? [] : ["--log-level", "debug"]
        let client = try await lab.spawn(
            in: phone, [Self.netres, "run", "--config", try config(lab, users: users, interfaces: interfaces)] + debug,
            output: lab.directory + "/netres.log")
        defer { keepLogs(of: cell, in: state, lab: lab, registrar: registrar) }
        // A registrar query that fails (kamcmd past its 5 s on a loaded machine) is "not yet":
        // the wait asks again within its bound instead of failing the cell on the lab's hiccup.
        @Sendable func converged(in state: String) async throws -> Bool {
            do { return try await probe.divergence(state: state) == nil } catch { return false }
        }
        let ready = try await eventually(within: .seconds(30)) { try await converged(in: "foreground") }
        let before = try await probe.divergence(state: "foreground") ?? "converged"
        try #require(ready, "not converged before the fault: \(before); \(log(lab))")
        @Sendable func setState(_ state: String) async throws {
            try await lab.run(
                in: phone, [Self.netres, "ctl", "--socket", lab.directory + "/netres.sock", "state", state])
        }
        // The call column is the foreground with an established call (FaultMatrixCall).
        let appState = state == "call" ? "foreground" : state
        let call =
            state == "call"
            ? try await FaultMatrixCall.place(
                in: CallFaultLab(
                    matrix: lab, phone: phone, server: server, wifi: wifi, registrar: registrar, client: client))
            : nil
        // Through background to suspended, as the platform does; then let the state's actions settle.
        if appState != "foreground" { try await setState("background") }
        if appState == "suspended" { try await setState("suspended") }
        let settled = try await eventually(within: .seconds(10)) { try await converged(in: appState) }
        let atRest = try await probe.divergence(state: appState) ?? "converged"
        try #require(settled, "not settled in \(appState): \(atRest); \(log(lab))")
        try await probe.waitForQuiet()
        let began = Date().timeIntervalSince1970  // the registrar logs CLOCK_REALTIME
        if let armed = cell.registrarFault { try await registrar.inject(armed) }
        let quietFrom = try await probe.sample().after
        let down = try await probe.sentWhileDown {
            try await cell.play(in: lab, wifi: wifi, cellular: cellular, elsewhere: elsewhere)
        }
        var sentWhileSuspended = 0
        if appState == "suspended" {
            try await Task.sleep(for: .seconds(1))
            sentWhileSuspended = try await probe.sample().before - quietFrom
            try await setState("background")
        }
        let ended = ContinuousClock.now
        let finalState = appState == "suspended" ? "background" : appState
        let pass = try await eventually(within: cell.convergeBound) { try await converged(in: finalState) }
        let seconds =
            Double((ContinuousClock.now - ended).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - ended).components.seconds)
        let since = registrar.requests().filter { $0.at >= began }
        let registers = users.map { user in since.filter { $0.kind == "REGISTER" && $0.user == user }.count }
        let requests = users.map { user in
            since.filter { $0.user == user && FaultMatrixProbe.sentByClient($0) }.count
        }
        let why = try await probe.divergence(state: finalState) ?? "converged"
        #expect(pass, "\(cell) in \(state): \(why); \(log(lab))")
        #expect(registers.allSatisfy { $0 <= Self.registerBound }, "\(cell) in \(state): REGISTERs \(registers)")
        let bounded = requests.allSatisfy { $0 <= Self.requestBound }
        let sent = since.map { "\($0.kind) \($0.user) \($0.fields["event"] ?? "")" }
        #expect(bounded, "\(cell) in \(state): requests \(requests): \(sent)")
        // The kernel's own TCP segments (FIN/RST, bare ACKs, keep-alive probes) carry no SIP: shown, not counted.
        let quietWhileDown = down.sent == 0
        let downMessage =
            "\(cell) in \(state): \(down.sent) packets sent while wifi was down (+\(down.closing) bare TCP)"
        #expect(quietWhileDown, "\(downMessage)")
        #expect(sentWhileSuspended == 0, "\(cell): \(sentWhileSuspended) packets sent while suspended")
        if cell.takesPathDown { #expect(down.downSamples > 0, "\(cell): the path was never seen down") }
        let callHeld = try await call?.verdict(after: cell, since: began) ?? true
        let clean = pass && bounded && callHeld && registers.allSatisfy { $0 <= Self.registerBound }
        record(
            cell.rawValue, state, pass: clean && down.sent == 0 && sentWhileSuspended == 0, seconds,
            registers.max() ?? 0)
    }

    /// With `FAULT_MATRIX_KEEP=DIR` the client logs at debug level and each cell leaves its log
    /// and the registrar's requests in DIR (`<fault>.<state>.netres.log`, `….registrar.txt`).
    static var keep: String? { ProcessInfo.processInfo.environment["FAULT_MATRIX_KEEP"] }

    func keepLogs(of cell: FaultMatrixCell, in state: String, lab: NetworkLab, registrar: LabRegistrar) {
        guard let keep = Self.keep else { return }
        let name = keep + "/" + cell.rawValue.filter { $0.isLetter || $0.isNumber || $0 == "-" } + "." + state
        try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: name + ".netres.log")
        try? FileManager.default.copyItem(atPath: lab.directory + "/netres.log", toPath: name + ".netres.log")
        let requests = registrar.requests().map { "\($0.at) \($0.kind) \($0.user) \($0.fields)" }
        try? requests.joined(separator: "\n").write(toFile: name + ".registrar.txt", atomically: true, encoding: .utf8)
    }

    /// Appends the cell's line to `FAULT_MATRIX_OUT` when set (one `O_APPEND` write: cells run side by side).
    func record(_ cell: String, _ state: String, pass: Bool, _ seconds: Double, _ registers: Int) {
        guard let out = ProcessInfo.processInfo.environment["FAULT_MATRIX_OUT"] else { return }
        let fd = open(out, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let line = "\(cell)|\(state)|\(pass)|\(String(format: "%.1f", seconds))|\(registers)\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
    }
}

/// Lets at most ``width`` matrix cells run at once; the others wait their turn in order.
actor CellGate {
    static let width = 3
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        if running >= Self.width {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            running += 1
        }
        defer {
            if waiting.isEmpty { running -= 1 } else { waiting.removeFirst().resume() }
        }
        return try await body()
    }
}
