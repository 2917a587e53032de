import Foundation
import NetworkLab

/// `netres-bench nat [minutes] [rebindings]`: staying reachable behind a NAT, and recovering from
/// its rebinding (issue 22).
///
/// One ``NetworkLab`` with the client behind a NAT gateway (endpoint-independent, 30 s UDP
/// timeout, as a home router) and Kamailio with nathelper, STUN on its SIP port and
/// `Flow-Timer: 25`. `netres run` (one UDP account, foreground, incoming calls answered) idles
/// `minutes`; the window counts its wake-ups (``IdleMeter``), its STUN keep-alives (debug log)
/// and the REGISTERs the registrar saw (binding queries, issue 23's binding check, among them:
/// some pings are queries), then sipp calls it through the registrar: reachable or not. Then `rebindings` times the
/// NAT rebinds (new public port) at a random point of the keep-alive cycle, with one call from
/// netres up through Kamailio and rtpengine for all the rounds (``NATMediaProbe``): each round
/// samples the time from the rebinding to the registrar's `REGISTERED` from the new port, and to
/// media restored (the first echo the relay delivers to the far end again), beside the
/// registrar's round trip measured in the same run from the client's host through the NAT
/// (``RegistrarRoundTrip``: 20 OPTIONS, before the idle window).
///
/// Invariants: every wait is bounded (30 s per step); the lab removes every namespace and process.
struct NATBenchmark {
    var minutes = 10
    var rebindings = 10

    func run() async throws {
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let netres = bin.appendingPathComponent("netres").path
        try await withNetworkLab { lab in
            var options = RegistrarOptions()
            options.nat = RegistrarNAT(flowTimer: 25)
            options.mediaRelay = true
            let network = try await lab.addClientBehindNAT(options: options, nat: NATOptions(udpTimeout: .seconds(30)))
            guard let nat = network.nat else { throw BenchError("nat: no NAT in the lab") }
            let registrar = network.registrar
            let config = lab.directory + "/nat.yaml"
            let socket = lab.directory + "/nat.sock"
            try """
            control-socket: \(socket)
            interfaces: [\(network.initial.interface)]
            hold-down: 0
            accounts: [{name: nat, registrar: \(registrar.address), domain: \(registrar.address), transport: udp,
                        user: nat, password: secret-nat, incoming-calls: answer}]
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let log = lab.directory + "/nat-daemon.log"
            let daemon = try await lab.spawn(
                in: network.client, [netres, "run", "--config", config, "--log-level", "debug"], output: log)
            guard try await eventually(within: .seconds(30), { try await !registrar.contacts().isEmpty }) else {
                throw BenchError("nat: not registered within 30 s; see \(lab.directory)")
            }
            func keepAlives() -> Int {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").components(
                    separatedBy: "stun-keep-alive-answered"
                )
                .count - 1
            }
            let roundTrips = try await RegistrarRoundTrip.measure(
                in: lab, host: network.client, from: network.initial.ipv4, to: registrar.address, port: registrar.port)
            let before = keepAlives()
            let idleFrom = realtime()
            let cost = IdleMeter.measure([daemon], seconds: minutes * 60)[0]
            let pings = keepAlives() - before
            let idle = registrar.requests().filter { $0.at >= idleFrom }
            let registers = idle.filter { $0.kind == "REGISTER" }.count
            let queries = idle.filter { $0.kind == "QUERIED" }.count
            let reached = try await callReaches(lab: lab, network: network)
            let media = try await NATMediaProbe.start(lab: lab, network: network, netres: netres, socket: socket)
            var recoveries: [Duration] = []
            var restorations: [Duration] = []
            for _ in 0..<rebindings {
                try await Task.sleep(for: .milliseconds(Int.random(in: 1000...20_000)))
                try await media.waitForQuiet()
                let floor = try await media.packets()
                let at = realtime()
                try await lab.inject(.natRebinding(nat))
                async let restored = media.restored(past: floor)
                let bound = await eventually(within: .seconds(30)) {
                    registrar.requests().contains { $0.kind == "REGISTERED" && $0.at >= at }
                }
                guard bound else { throw BenchError("nat: no REGISTER within 30 s of a rebinding") }
                if let done = registrar.requests().first(where: { $0.kind == "REGISTERED" && $0.at >= at }) {
                    recoveries.append(.seconds(done.at - at))
                }
                let seen = await restored
                if let seen { restorations.append(.seconds(seen - at)) }
                let line =
                    "rebinding: binding \(recoveries.last.map { "\($0)" } ?? "-"), media \(seen.map { "\($0 - at) seconds" } ?? "not restored")\n"
                FileHandle.standardError.write(Data(line.utf8))
            }
            print(
                Self.report(
                    minutes: minutes, cost: cost, pings: pings, registers: registers, queries: queries,
                    reached: reached,
                    recoveries: LatencyStats(recoveries), restorations: LatencyStats(restorations),
                    roundTrips: LatencyStats(roundTrips)))
        }
    }

    /// sipp calls the client through the registrar (``NetworkLab/call(_:through:from:port:mediaPort:within:)``:
    /// INVITE, 200, ACK, BYE); whether it was answered within 30 s.
    func callReaches(lab: NetworkLab, network: ClientAndRegistrar) async throws -> Bool {
        let reach = try await lab.call("nat", through: network.registrar, from: network.server, within: .seconds(30))
        return reach.answered != nil
    }

    static func report(
        minutes: Int, cost: IdleCost, pings: Int, registers: Int, queries: Int, reached: Bool, recoveries: LatencyStats,
        restorations: LatencyStats, roundTrips: LatencyStats
    ) -> String {
        let hours = Double(minutes) / 60
        return """
            | behind a NAT with a 30 s UDP timeout, `Flow-Timer: 25` | value |
            |---|---|
            | idle | \(minutes) min |
            | STUN keep-alives | \(pings) (\(format1(Double(pings) / hours)) per hour) |
            | REGISTER requests while idle (binding queries answered among them) | \(registers) (\(queries)) |
            | process wake-ups | \(cost.wakeups) (\(format1(Double(cost.wakeups) / hours)) per hour), CPU \(cost.cpu) |
            | incoming call after the idle window | \(reached ? "reached" : "LOST") |

            | after a NAT rebinding (ms) | n | p50 | p99 | max | p50 ÷ round trip p50 |
            |---|---|---|---|---|---|
            | rebinding → new binding at the registrar | \(recoveries.count) | \(format1(recoveries.p50 / 1000)) | \(format1(recoveries.p99 / 1000)) | \(format1(recoveries.max / 1000)) | \(format1(recoveries.p50 / roundTrips.p50))× |
            | rebinding → media restored (the call's first datagram through the relay at the far end again; \(restorations.count) of \(recoveries.count) rounds) | \(restorations.count) | \(format1(restorations.p50 / 1000)) | \(format1(restorations.p99 / 1000)) | \(format1(restorations.max / 1000)) | \(format1(restorations.p50 / roundTrips.p50))× |
            | registrar round trip (OPTIONS → 200 through the NAT) | \(roundTrips.count) | \(format3(roundTrips.p50 / 1000)) | \(format3(roundTrips.p99 / 1000)) | \(format3(roundTrips.max / 1000)) | 1× |
            """
    }
}
