import Foundation
import NetworkLab

extension CallRecoveryBenchmark {
    /// Starts `netres run` (account `alice`, UDP, hold-down 0) in the phone host, waits until
    /// it is bound, and places the call to `far` with `netres ctl call`; returns once sipp has
    /// the ACK.
    func startNetres(_ lab: NetworkLab, phone: LabHost, registrar: LabRegistrar, calling far: LabSIPp) async throws {
        let dir = lab.directory
        let netres = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("netres").path
        // One recovery per flap is the figure: the default policy's flap damping (which holds back
        // the fourth flap within ~15 s) is turned off, nothing else changes.
        let policy = try await lab.run(in: phone, [netres, "policy", "default"])
        let undamped = policy.replacingOccurrences(of: "  penalty: 1000\n", with: "  penalty: 0\n")
        guard undamped != policy else { throw BenchError("the default policy has no `penalty: 1000` line") }
        try undamped.write(toFile: dir + "/policy.yaml", atomically: true, encoding: .utf8)
        try """
        policy: \(dir)/policy.yaml
        control-socket: \(dir)/netres.sock
        interfaces: [wifi]
        hold-down: 0
        accounts: [{name: alice, registrar: \(registrar.address), domain: \(registrar.address), transport: udp,
                    user: alice, password: secret-alice}]

        """.write(toFile: dir + "/netres.yaml", atomically: true, encoding: .utf8)
        try await lab.spawn(in: phone, [netres, "run", "--config", dir + "/netres.yaml"], output: dir + "/netres.log")
        try await bound("alice", registrar, log: dir + "/netres.log")
        try await lab.run(in: phone, [netres, "ctl", "--socket", dir + "/netres.sock", "call", "alice", far.uri()])
        try await answered(far, "netres")
    }

    /// Starts baresip 1.0 headless in the phone host as `peer` (NetworkLab's ``LabBaresip``: its
    /// config keeps a call up; no fixed address, so baresip follows an address change at its own
    /// 60 s poll; port 5064; the registrar as its outbound proxy, so its call goes through Kamailio
    /// as netres's does), waits until it is bound, and dials `far` through `ctrl_tcp`.
    func startBaresip(_ lab: NetworkLab, phone: LabHost, registrar: LabRegistrar, calling far: LabSIPp)
        async throws
    {
        let peer = try await lab.startBaresip(
            in: phone, user: "peer", registrar: registrar, address: nil, port: 5064, controlPort: 4444,
            outboundProxy: true)
        try await peer.dial(far.uri())
        try await answered(far, "baresip")
    }

    private func bound(_ user: String, _ registrar: LabRegistrar, log: String) async throws {
        let ok = try await eventually(within: .seconds(15)) {
            try await registrar.bindings().contains {
                $0.addressOfRecord.split(separator: "@").first.map(String.init) == user
            }
        }
        guard ok else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw BenchError("\(user) did not register within 15 s: \(text.suffix(1500))")
        }
    }

    private func answered(_ far: LabSIPp, _ who: String) async throws {
        guard await eventually(within: .seconds(15), { !far.received("ACK").isEmpty }) else {
            throw BenchError("\(who)'s call was not answered and ACKed: \(far.diagnostics())")
        }
    }

    /// `floorSamples` authenticated REGISTERs from sipp in the phone host (its own user `floor`),
    /// at 10/s: sent → 200 OK, from sipp's message log.
    func measureFloor(_ lab: NetworkLab, phone: LabHost, address: String, registrar: LabRegistrar) async throws
        -> [Duration]
    {
        let dir = lab.directory
        try SIPRecoveryBenchmark.sippScenario.write(toFile: dir + "/register.xml", atomically: true, encoding: .utf8)
        try "SEQUENTIAL\nfloor;[authentication username=floor password=secret-floor]\n"
            .write(toFile: dir + "/users.csv", atomically: true, encoding: .utf8)
        let sipp = try await lab.startSIPp(
            in: phone, scenario: dir + "/register.xml", address: address, port: 5090, mediaPort: 17_000,
            remote: "\(registrar.address):\(registrar.port)",
            arguments: ["-inf", dir + "/users.csv", "-m", "\(floorSamples)", "-r", "10"], timeout: .seconds(120))
        _ = await sipp.exitCode(within: .seconds(120))
        var samples: [Duration] = []
        var sentAt: Double?
        for message in sipp.messages() where message.cseq == 2 {
            if message.sent, message.method == "REGISTER" {
                sentAt = message.at
            } else if !message.sent, message.status == 200, let start = sentAt {
                samples.append(.microseconds(Int64(((message.at - start) * 1e6).rounded())))
                sentAt = nil
            }
        }
        guard !samples.isEmpty else {
            throw BenchError("no floor sample: \(sipp.messages().count) messages; \(sipp.diagnostics())")
        }
        return samples
    }
}
