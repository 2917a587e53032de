import Foundation

extension SIPRecoveryBenchmark {
    /// What a client did after each fault.
    struct ClientResult {
        var name: String
        var flapRecoveries: [Duration] = []
        var flapsWithoutRegister = 0
        var addressChange: Duration?
        var oldBindingRemoved: Bool?
        var registersWhileDown = 0
    }

    /// Starts baresip 1.0 (headless: foreground, modules g711, account, menu, ctrl_tcp) in the
    /// client namespace as user `peer`, waits (≤ 10 s) for its first binding, then runs the faults.
    func measurePeer(_ lab: SIPLab) throws -> ClientResult {
        let config = lab.directory.appendingPathComponent("baresip")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        try """
        poll_method\t\tepoll
        sip_trans_bsize\t\t128
        audio_player\t\tnone
        audio_source\t\tnone
        audio_alert\t\tnone
        module_path\t\t/usr/lib/baresip/modules
        module\t\t\tg711.so
        module_app\t\taccount.so
        module_app\t\tmenu.so
        module_app\t\tctrl_tcp.so
        ctrl_tcp_listen\t\t127.0.0.1:4444

        """.write(to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        try "<sip:peer@\(SIPLab.registrarAddress):\(SIPLab.port);transport=udp>;auth_pass=secret-peer;regint=600\n"
            .write(to: config.appendingPathComponent("accounts"), atomically: true, encoding: .utf8)
        let baresip = try lab.start(
            in: lab.clientNamespace, ["/usr/bin/baresip", "-f", config.path],
            output: lab.directory.appendingPathComponent("baresip.log").path)
        defer { lab.stop(baresip) }
        let startedAt = realtimeNow() - 1
        try waitFor(seconds: 10) { registered(lab, user: "peer", after: startedAt) != nil }
        return try runFaults(lab, user: "peer", name: "baresip 1.0.0 (Debian `baresip-core`)", flaps: peerFlaps)
    }

    /// The first `REGISTERED` of `user` stamped after `instant` (whose Contact contains `contact`).
    func registered(_ lab: SIPLab, user: String, after instant: Double, contact: String = "") -> Double? {
        lab.registrarLog().first {
            $0.kind == "REGISTERED" && $0.user == user && $0.realtime > instant
                && (contact.isEmpty || $0.contact.contains(contact))
        }?.realtime
    }

    /// `flaps` × (client link admin-down for `downSeconds`, then up with its default route put back
    /// in the same command, as DHCP or networkd would), then one address change 198.18.0.2 →
    /// 198.18.0.3; every wait is bounded, a missing REGISTER is counted, not waited for.
    func runFaults(_ lab: SIPLab, user: String, name: String, flaps: Int) throws -> ClientResult {
        var result = ClientResult(name: name)
        let ns = lab.clientNamespace
        for _ in 0..<flaps {
            let downAt = realtimeNow()
            try shell("ip -n \(ns) link set nrc0 down")
            sleep(downSeconds)
            let upAt = realtimeNow()
            result.registersWhileDown +=
                lab.registrarLog().filter {
                    $0.kind == "REGISTER" && $0.user == user && $0.realtime > downAt && $0.realtime < upAt
                }.count
            try shell(
                "ip -n \(ns) link set nrc0 up && ip -n \(ns) route replace default via \(SIPLab.registrarAddress)")
            var confirmed: Double?
            try? waitFor(seconds: peerBound) {
                confirmed = registered(lab, user: user, after: upAt)
                return confirmed != nil
            }
            if let confirmed {
                result.flapRecoveries.append(.microseconds(Int64(((confirmed - upAt) * 1e6).rounded())))
            } else {
                result.flapsWithoutRegister += 1
            }
            FileHandle.standardError.write(
                Data("flap: \(name): \(confirmed.map { "\($0 - upAt) s" } ?? "none")\n".utf8))
        }
        let changeAt = realtimeNow()
        try shell(
            "ip -n \(ns) addr add 198.18.0.3/24 dev nrc0 && ip -n \(ns) addr del \(SIPLab.clientAddress)/24 dev nrc0"
                + " && ip -n \(ns) route replace default via \(SIPLab.registrarAddress)")
        var confirmed: Double?
        try? waitFor(seconds: addressChangeBound) {
            confirmed = registered(lab, user: user, after: changeAt, contact: "198.18.0.3")
            return confirmed != nil
        }
        if let confirmed {
            result.addressChange = .microseconds(Int64(((confirmed - changeAt) * 1e6).rounded()))
            let bound = (try? lab.boundContacts()) ?? []
            result.oldBindingRemoved = !bound.contains { $0.contains("@\(SIPLab.clientAddress)") }
        }
        // Put the original address back for whoever runs next.
        try shell(
            "ip -n \(ns) addr add \(SIPLab.clientAddress)/24 dev nrc0 && ip -n \(ns) addr del 198.18.0.3/24 dev nrc0"
                + " && ip -n \(ns) route replace default via \(SIPLab.registrarAddress)")
        return result
    }

    /// Prints the Markdown that goes into BENCHMARKS.md.
    func report(floor: [Duration], peer: ClientResult) {
        let floorStats = LatencyStats(floor)
        let flaps = LatencyStats(peer.flapRecoveries)
        let change = peer.addressChange.map { format1(LatencyStats([$0]).p50 / 1000) + " ms" } ?? "no REGISTER"
        let removed = peer.oldBindingRemoved.map { $0 ? "yes" : "no (still bound)" } ?? "n/a"
        print(
            """
            ### Floor: the registrar's REGISTER round trip (µs, capture on the client veth)

            | measurement | n | p50 | p99 | max | vs floor |
            |---|---|---|---|---|---|
            \(floorStats.row("sipp authenticated REGISTER → 200 OK", floor: nil))

            ### Recovery after a client link flap (down \(downSeconds) s; µs from link-up to the 200 OK)

            | client | flaps | re-registered | p50 | p99 | max | vs floor | no REGISTER within \
            \(Int(peerBound)) s | REGISTERs while down |
            |---|---|---|---|---|---|---|---|---|
            | \(peer.name) | \(peer.flapRecoveries.count + peer.flapsWithoutRegister) | \(flaps.count) | \
            \(format1(flaps.p50)) | \(format1(flaps.p99)) | \(format1(flaps.max)) | \
            \(flaps.count > 0 ? format1(flaps.p50 / floorStats.p50) + "×" : "n/a") | \(peer.flapsWithoutRegister) | \
            \(peer.registersWhileDown) |

            ### Address change (198.18.0.2 → 198.18.0.3; bound \(Int(addressChangeBound)) s)

            | client | new Contact bound after | old binding removed |
            |---|---|---|
            | \(peer.name) | \(change) | \(removed) |
            """)
    }
}
