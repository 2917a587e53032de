import Foundation
import Glibc
import NetworkLab
import Testing

/// The fault matrix: every link fault × app state, against the built `netres run` with one UDP and
/// one TCP account (reg, presence-others and message-summary subscriptions), a wifi and a cellular
/// link, and Kamailio. A cell passes when, after the fault, each account is bound exactly once, at
/// its current address, with at most ``requestBound`` REGISTERs counted at the registrar since the
/// fault began. With `FAULT_MATRIX_OUT=FILE` each cell appends `fault|state|pass|seconds|requests`
/// to FILE (`scripts/fault-matrix.sh` renders FAULT-MATRIX.md from it).
///
/// Serialized: 30 labs at once (60 clients, 30 registrars) overrun a 2-core machine and no cell
/// registers at all; one at a time the whole matrix takes a few minutes.
@Suite(
    .serialized, .needsNamespaces, .enabled(if: LabRegistrar.isInstalled, "needs kamailio"),
    .timeLimit(.minutes(10)))
struct FaultMatrixTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static let requestBound = 8

    enum Cell: String, CaseIterable, Sendable {
        case carrierLoss = "carrier-loss", adminDown = "admin-down"
        case addressChangeMakeBeforeBreak = "address-change (make-before-break)"
        case addressChangeBreakBeforeMake = "address-change (break-before-make)"
        case renumber, defaultRouteLoss = "default-route-loss", linkRecreate = "link-recreate"
        case flap = "flap 10 every 200ms", partition = "partition (both ways)"
        case packetLoss = "packet-loss 30%"

        func fault(_ wifi: LabLink) -> Fault {
            switch self {
            case .carrierLoss: .carrierLoss(wifi, for: .seconds(2))
            case .adminDown: .adminDown(wifi, for: .seconds(2))
            case .addressChangeMakeBeforeBreak: .addressChange(wifi, .makeBeforeBreak)
            case .addressChangeBreakBeforeMake: .addressChange(wifi, .breakBeforeMake)
            case .renumber: .renumber(wifi)
            case .defaultRouteLoss: .defaultRouteLoss(wifi, for: .seconds(2))
            case .linkRecreate: .linkRecreate(wifi, after: .seconds(1))
            case .flap: .flap(wifi, FlapSchedule(count: 10, period: .milliseconds(200)))
            case .partition: .partition(wifi, .both, for: .seconds(2))
            case .packetLoss: .packetLoss(wifi, percent: 30, for: .seconds(2))
            }
        }
    }

    static let states = ["foreground", "background", "suspended"]
    /// Cells that end with the old binding while suspended (FAULT-MATRIX.md shows them as FAIL).
    static let staleWhileSuspended: Set<Cell> = [
        .addressChangeMakeBeforeBreak, .addressChangeBreakBeforeMake, .renumber,
    ]

    /// One `netres run` config with a UDP and a TCP account, each with reg, message-summary and
    /// presence-others subscriptions, starting in the foreground; its path.
    func config(_ lab: NetworkLab, users: [String]) throws -> String {
        let path = lab.directory + "/netres.yaml"
        var text = """
            interfaces: [wifi]
            hold-down: 0
            control-socket: \(lab.directory)/netres.sock
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

    @Test(arguments: Cell.allCases, states)
    func eachAccountEndsBoundOnceAtItsCurrentAddressWithBoundedRequests(cell: Cell, state: String) async throws {
        try await withNetworkLab { lab in
            let phone = try await lab.addHost("phone")
            let server = try await lab.addHost("server")
            let wifi = try await lab.connect(phone, to: server, as: "wifi")
            let registrar = try await lab.startRegistrar(in: server)
            let users = ["udpuser", "tcpuser"]
            try await lab.spawn(
                in: phone, [Self.netres, "run", "--config", try config(lab, users: users)],
                output: lab.directory + "/netres.log")
            @Sendable func converged() async throws -> Bool {
                let address = await lab.addresses(of: wifi).ipv4
                let bindings = try await registrar.bindings()
                return users.allSatisfy { user in
                    let mine = bindings.filter { $0.contact.contains("\(user)@") }
                    return mine.count == 1 && mine[0].contact.contains("@\(address):")
                }
            }
            let ready = try await eventually(within: .seconds(30), converged)
            let before = try await registrar.bindings().map(\.contact)
            try #require(ready, "not bound before the fault: \(before); \(log(lab))")
            // The app state changes once bound (a suspended start registers nothing, by policy).
            try await lab.run(
                in: phone, [Self.netres, "ctl", "--socket", lab.directory + "/netres.sock", "state", state])
            try await Task.sleep(for: .seconds(1))
            let began = realtime()
            try await lab.inject(cell.fault(wifi))
            let ended = ContinuousClock.now
            let pass = try await eventually(within: .seconds(30), converged)
            let seconds =
                Double((ContinuousClock.now - ended).components.attoseconds) / 1e18
                + Double((ContinuousClock.now - ended).components.seconds)
            let registers = registrar.requests().filter { $0.kind == "REGISTER" && $0.at >= began }
            let perUser = users.map { user in registers.filter { $0.user == user }.count }
            let bindings = try await registrar.bindings().map(\.contact)
            if state == "suspended" && Self.staleWhileSuspended.contains(cell) {
                // Known: suspended, netres acts on no network change, so a changed address keeps
                // the old binding until the app resumes. Recorded, not hidden.
                withKnownIssue("a suspended client does not re-register a changed address") {
                    #expect(pass, "\(cell) in \(state): not converged; bindings \(bindings)")
                }
            } else {
                #expect(pass, "\(cell) in \(state): not converged; bindings \(bindings); \(log(lab))")
            }
            #expect(perUser.allSatisfy { $0 <= Self.requestBound }, "\(cell) in \(state): REGISTERs \(perUser)")
            if let out = ProcessInfo.processInfo.environment["FAULT_MATRIX_OUT"] {
                let line =
                    "\(cell.rawValue)|\(state)|\(pass)|\(String(format: "%.1f", seconds))|\(perUser.max() ?? 0)\n"
                if let handle = FileHandle(forWritingAtPath: out) {
                    handle.seekToEndOfFile()
                    handle.write(Data(line.utf8))
                    try? handle.close()
                }
            }
        }
    }
}
