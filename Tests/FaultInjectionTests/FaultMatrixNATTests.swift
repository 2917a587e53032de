import Foundation
import NetworkLab
import Testing

/// The fault matrix's NAT rows (issue 22): mapping expiry, rebinding and a gateway reboot, in
/// every app state, against the built `netres run` (the matrix's UDP and TCP accounts with their
/// subscriptions) behind the lab's NAT (3 s UDP timeout) and Kamailio with nathelper, STUN and
/// `Flow-Timer: 1`. One lab for all twelve cells, played state after state (foreground, call,
/// background, suspended), so the rows cost one setup.
///
/// A cell passes when, after its fault:
/// - each account is bound once and its subscriptions are as the state allows, their last
///   SUBSCRIBE seen from the NAT's public address (``FaultMatrixProbe/divergence(state:)``);
/// - in the foreground (and with a call), after a rebinding or a reboot, each account has
///   registered again from a new public port: its keep-alive showed the change (UDP) or its
///   connection broke (TCP); after a mere expiry the port is kept and nothing is needed;
/// - at most ``FaultMatrixTests/registerBound`` REGISTERs per account came since the fault;
/// - suspended, nothing left the phone until the cell resumed it (the three faults share one
///   suspension and one resume there, so the column costs one app-state damping wait, not three).
///
/// Away from the foreground the policy keeps flow pings `wake-up-minimum-interval` (600 s)
/// apart, so a background client cannot see a rebinding before its next wake-up (README, "Behind
/// a NAT": push is what reaches it); those cells check that the faults cost no storm and that the
/// state's services stay as they were. The call cell checks that the call stays up and hangs up
/// cleanly through the new mapping.
@Suite(
    .needsNamespaces, .enabled(if: LabRegistrar.isInstalled && LabSIPp.isInstalled, "needs kamailio and sipp"),
    .timeLimit(.minutes(4)))
struct FaultMatrixNATTests {
    enum Row: String, CaseIterable {
        case expiry = "nat-mapping-expiry", rebinding = "nat-rebinding", reboot = "nat-gateway-reboot 2s"

        func fault(_ nat: LabNAT) -> Fault {
            switch self {
            case .expiry: .natMappingExpiry(nat)
            case .rebinding: .natRebinding(nat)
            case .reboot: .natGatewayReboot(nat, for: .seconds(2))
            }
        }
    }

    @Test func everyNATFaultInEveryAppStateEndsConvergedWithoutAStorm() async throws {
        try await withNetworkLab { lab in
            var options = RegistrarOptions()
            options.nat = RegistrarNAT(flowTimer: 1)
            let network = try await lab.addClientBehindNAT(
                link: "wifi", options: options, nat: NATOptions(udpTimeout: .seconds(3)))
            let nat = try #require(network.nat)
            let users = [CallFaultLab.user, "tcpuser"]
            var configured = FaultMatrixProbe(
                lab: lab, phone: network.client, wifi: network.link, registrar: network.registrar, users: users)
            configured.publicAddress = await lab.publicAddress(of: nat)
            let probe = configured
            try await probe.installCounter()
            let matrix = FaultMatrixTests()
            let client = try await lab.spawn(
                in: network.client,
                [
                    FaultMatrixTests.netres, "run", "--config",
                    try matrix.config(lab, users: users, interfaces: ["wifi"]),
                ],
                output: lab.directory + "/netres.log")
            let registrar = network.registrar
            // A registrar query that fails (kamcmd past its 5 s on a loaded machine) is "not yet".
            @Sendable func converged(in state: String) async -> Bool {
                do { return try await probe.divergence(state: state) == nil } catch { return false }
            }
            let ready = await eventually(within: .seconds(30)) { await converged(in: "foreground") }
            try #require(ready, "not converged behind the NAT: \(matrix.log(lab))")
            let ctl = [FaultMatrixTests.netres, "ctl", "--socket", lab.directory + "/netres.sock"]
            let calls = CallFaultLab(
                matrix: lab, phone: network.client, server: network.server, wifi: network.link,
                registrar: registrar, client: client)
            // Foreground first and the call with it: the app state changes only twice more (to
            // background, to suspended) and once back (the resume), as few as the states need.
            for state in ["foreground", "call", "background", "suspended"] {
                let appState = state == "call" ? "foreground" : state
                if appState != "foreground" { try await lab.run(in: network.client, ctl + ["state", appState]) }
                let call = state == "call" ? try await FaultMatrixCall.place(in: calls) : nil
                let settled = await eventually(within: .seconds(10)) { await converged(in: appState) }
                try #require(settled, "not settled in \(appState): \(matrix.log(lab))")
                // Suspended, the three faults come in one suspension (nothing may be sent), then one
                // resume; elsewhere each fault is checked on its own.
                let batches = appState == "suspended" ? [Row.allCases] : Row.allCases.map { [$0] }
                for rows in batches {
                    // Suspended, "nothing sent" is about the faults: an attempt the previous state
                    // began (a REGISTER after the background cell's broken TCP connection) must
                    // have ended first. Its retry, if any, is held while suspended and sends nothing.
                    if appState == "suspended" {
                        let idle = await eventually(within: .seconds(30)) {
                            Self.nothingInFlight(
                                (try? String(contentsOfFile: lab.directory + "/netres.log", encoding: .utf8)) ?? "")
                        }
                        try #require(idle, "an attempt of the previous state still in flight: \(matrix.log(lab))")
                    }
                    try await probe.waitForQuiet()
                    let began = realtime()
                    let quietFrom = try await probe.sample().after
                    let sourcesBefore = users.map { user in
                        registrar.requests().last { $0.kind == "REGISTER" && $0.user == user }?.fields["src"]
                    }
                    for row in rows { try await lab.inject(row.fault(nat)) }
                    var sentWhileSuspended = 0
                    if appState == "suspended" {
                        try await Task.sleep(for: .seconds(1))
                        sentWhileSuspended = try await probe.sample().before - quietFrom
                        try await lab.run(in: network.client, ctl + ["state", "background"])
                    }
                    let finalState = appState == "suspended" ? "background" : appState
                    let mustRebind = appState == "foreground" && rows != [.expiry]
                    @Sendable func rebound() -> Bool {
                        zip(users, sourcesBefore).allSatisfy { user, before in
                            registrar.requests().contains {
                                $0.kind == "REGISTER" && $0.user == user && $0.at >= began && $0.fields["src"] != before
                            }
                        }
                    }
                    let ended = ContinuousClock.now
                    // The resume waits out the runtime's app-state damping (~20 s, as in the matrix).
                    let pass = await eventually(within: .seconds(40)) {
                        await converged(in: finalState) && (!mustRebind || rebound())
                    }
                    let registers = users.map { user in
                        registrar.requests().filter { $0.kind == "REGISTER" && $0.user == user && $0.at >= began }.count
                    }
                    let why: String
                    do { why = try await probe.divergence(state: finalState) ?? "converged" } catch { why = "\(error)" }
                    let bounded = registers.allSatisfy { $0 <= FaultMatrixTests.registerBound }
                    #expect(pass, "\(rows) in \(state): \(why), rebound: \(rebound()); \(matrix.log(lab))")
                    #expect(bounded, "\(rows) in \(state): REGISTERs \(registers)")
                    #expect(
                        sentWhileSuspended == 0,
                        "\(rows) suspended: \(sentWhileSuspended) packets sent; \(matrix.log(lab))")
                    let seconds = Double((ContinuousClock.now - ended).components.seconds)
                    for row in rows {
                        let clean = pass && bounded && sentWhileSuspended == 0
                        matrix.record(row.rawValue, state, pass: clean, seconds, registers.max() ?? 0)
                    }
                }
                if let call {
                    #expect(
                        try await calls.state(of: call.id) == "active", "the call behind the NAT: \(matrix.log(lab))")
                    try await calls.ctl("hangup", call.id)
                    #expect(await call.far.exitCode(within: .seconds(30)) == 0, "sipp: \(call.far.diagnostics())")
                }
            }
        }
    }

    /// Whether no service's last action line in the client's event log is `started`: no attempt
    /// is in flight (one in backoff may wait: while suspended the executor holds it).
    static func nothingInFlight(_ log: String) -> Bool {
        var last: [Substring: Substring] = [:]
        for line in log.split(separator: "\n") where line.contains(" action ") {
            guard let arrow = line.range(of: " -> ") else { continue }
            let head = line[..<arrow.lowerBound].split(separator: " ")
            guard head.count >= 2 else { continue }
            last[head[head.count - 2]] = line[arrow.upperBound...].split(separator: " ").first ?? ""
        }
        return !last.values.contains { $0 == "started" }
    }
}
