import Foundation
import Glibc
import NetworkLab

/// `netres-bench pjsip [changes]`: a PJSIP (pjsua2 2.15) application through an address change,
/// three ways in the same lab and events: alone (PJSIP's defaults), told by the application
/// (`Endpoint.handleIpChange()` called the moment the address changed: PJSIP's own recovery, the
/// floor an outside detector can reach), and with netres deciding through the repository's
/// adapter (`examples/pjsua2`, an external plugin). Per change: from the address change to the
/// registrar's `REGISTERED` of the new Contact, and to the far end's (baresip) 200 to the
/// re-INVITE with the new address; as ratios to the registrar's round trip (OPTIONS) measured in
/// the same run. One lab per way: a phone (pjsua2, netres), Kamailio record-routing, baresip.
///
/// Invariants: every wait is bounded (`window` per change); the lab removes its namespaces and
/// processes; a way that does not move within the window is reported as such, not timed.
struct PJSIPBenchmark {
    var changes = 5
    /// How long a change may take before it counts as "did not move".
    var window = Duration.seconds(30)

    enum Way: String, CaseIterable {
        case alone = "pjsua2 alone"
        case told = "pjsua2, handleIpChange() called at the change"
        case netres = "pjsua2 with netres (adapter)"
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path
    static let python = root + "/.build/pjsua2-venv/bin/python"
    static let phone = root + "/examples/pjsua2/headless_phone.py"

    func run() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw BenchError("pjsip: no \(Self.python): run scripts/install-deps.sh pjsua2")
        }
        let netres = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("netres").path
        var rows: [String] = []
        var floor: [Duration] = []
        for way in Way.allCases {
            try await withNetworkLab { lab in
                let (binding, reinvite, rtt) = try await measure(way, lab: lab, netres: netres)
                floor += rtt
                rows.append(Self.row(way, binding, reinvite, floor: LatencyStats(rtt)))
            }
        }
        let rtt = LatencyStats(floor)
        print(
            ([
                "| address change (ms) → | new binding p50 | max | ratio | far end's 200 to the re-INVITE p50 | max | ratio |",
                "|---|---|---|---|---|---|---|",
            ] + rows + [
                "", "Registrar round trip (OPTIONS, phone → Kamailio): p50 \(format1(rtt.p50)) µs, the ratios' unit.",
            ])
            .joined(separator: "\n"))
    }

    /// One way's samples: change → binding, change → 200 to the re-INVITE, and the round trips.
    func measure(_ way: Way, lab: NetworkLab, netres: String) async throws -> ([Duration?], [Duration?], [Duration]) {
        let phone = try await lab.addHost("phone")
        let server = try await lab.addHost("server")
        let far = try await lab.addHost("far")
        let wifi = try await lab.connect(phone, to: server, as: "wifi")
        let registrar = try await lab.startRegistrar(in: server, options: RegistrarOptions(recordRoute: true))
        let lan = try await lab.connect(far, to: server, as: "lan")
        let bob = try await lab.startBaresip(
            in: far, user: "bob", registrar: registrar, address: await lab.addresses(of: lan).ipv4, autoAnswer: true)
        var command = [
            Self.python, Self.phone, "--registrar", registrar.address, "--user", "alice", "--password",
            "secret-alice", "--call", "sip:bob@\(registrar.address)",
        ]
        if way == .told { command.append("--ip-change-on-signal") }
        if way == .netres {
            let socket = lab.directory + "/netres.sock"
            try "control-socket: \(socket)\ninterfaces: [wifi]\nhold-down: 0\naccounts: []\n".write(
                toFile: lab.directory + "/netres.yaml", atomically: true, encoding: .utf8)
            try await lab.spawn(
                in: phone, [netres, "run", "--config", lab.directory + "/netres.yaml"],
                output: lab.directory + "/netres.log")
            guard await eventually(within: .seconds(15), { FileManager.default.fileExists(atPath: socket) }) else {
                throw BenchError("pjsip: netres did not start; see \(lab.directory)/netres.log")
            }
            command += ["--socket", socket]
        }
        let pid = try await lab.spawn(
            in: phone, command, output: lab.directory + "/pjsua2.log", environment: ["PYTHONDONTWRITEBYTECODE": "1"])
        guard await eventually(within: .seconds(30), { !bob.received("ACK").isEmpty }) else {
            throw BenchError("pjsip (\(way.rawValue)): no call up; see \(lab.directory)/pjsua2.log")
        }
        let rtt = try await RegistrarRoundTrip.measure(
            in: lab, host: phone, from: await lab.addresses(of: wifi).ipv4, to: registrar.address, port: 5060)
        var bindings: [Duration?] = []
        var reinvites: [Duration?] = []
        for _ in 0..<changes {
            let changedAt = realtime()
            try await lab.inject(.addressChange(wifi, .makeBeforeBreak))
            if way == .told { kill(pid, SIGUSR1) }
            let new = await lab.addresses(of: wifi).ipv4
            var bound: Double?
            var answered: Double?
            _ = await eventually(within: window) {
                bound =
                    bound
                    ?? registrar.requests().first {
                        $0.kind == "REGISTERED" && $0.at >= changedAt && $0.contact.contains("@\(new):")
                    }?.at
                answered = answered ?? Self.reinviteAnswered(registrar, since: changedAt, address: new)
                return bound != nil && answered != nil
            }
            bindings.append(bound.map { .microseconds(Int64(($0 - changedAt) * 1e6)) })
            reinvites.append(answered.map { .microseconds(Int64(($0 - changedAt) * 1e6)) })
            if way == .alone && bound == nil { break }  // it does not move: once is the measurement
        }
        return (bindings, reinvites, rtt)
    }

    /// When the proxy relayed the far end's 200 to a re-INVITE that alice sent from `address`
    /// after `since` (the registrar's request log: the INVITE's source and CSeq, the 200's time).
    static func reinviteAnswered(_ registrar: LabRegistrar, since: Double, address: String) -> Double? {
        let requests = registrar.requests()
        for invite in requests where invite.kind == "INVITE" && invite.at >= since {
            guard invite.fields["src"]?.hasPrefix("\(address):") == true else { continue }
            let answer = requests.first {
                $0.kind == "REPLY200" && $0.fields["method"] == "INVITE" && $0.fields["cseq"] == invite.fields["cseq"]
                    && $0.fields["callid"] == invite.fields["callid"] && $0.at >= invite.at
            }
            if let answer { return answer.at }
        }
        return nil
    }

    static func row(_ way: Way, _ binding: [Duration?], _ reinvite: [Duration?], floor: LatencyStats) -> String {
        func cells(_ samples: [Duration?]) -> String {
            let moved = samples.compactMap { $0 }
            guard !moved.isEmpty else { return "did not move in 30 s (\(samples.count) change) | – | – " }
            let stats = LatencyStats(moved)
            let missed = samples.count - moved.count
            return "\(format1(stats.p50 / 1000))\(missed > 0 ? " (\(missed) of \(samples.count) did not move)" : "") "
                + "| \(format1(stats.max / 1000)) | \(format1(stats.p50 / floor.p50))× "
        }
        return "| \(way.rawValue) | " + cells(binding) + "| " + cells(reinvite) + "|"
    }
}
