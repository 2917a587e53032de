import Foundation
import NetworkLab

extension SIPRecoveryBenchmark {
    /// What a client did after each fault.
    struct ClientResult {
        var name: String
        var flapRecoveries: [Duration] = []
        var flapsWithoutRegister = 0
        /// One entry per address change: how long until the new Contact was bound (nil: never
        /// within the bound), and whether `ul.dump` had lost the old Contact 2 s later.
        var addressChanges: [(bound: Duration?, oldBindingRemoved: Bool)] = []
        /// REGISTER requests (challenged or not) the registrar saw from this client during the flaps.
        var registerRequests = 0
    }

    /// Starts NetResilience (`netres run --config`, built beside this executable) as user
    /// `netres` and baresip 1.0 (headless: foreground, modules g711, account, menu, ctrl_tcp) as
    /// user `peer` (unless `peer` is false), both in the client host, and waits (≤ 10 s) for
    /// every first binding.
    func startClients(_ lab: SIPLab, peer: Bool, caFile: String? = nil) async throws {
        let startedAt = realtime() - 1
        let netres = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("netres").path
        let netresConfig = lab.directory + "/netres.yaml"
        try """
        log-format: json
        control-socket: \(lab.directory)/netres.sock
        interfaces: [\(lab.initial.interface)]
        hold-down: 0
        accounts:
          - name: netres
            registrar: \(lab.registrarAddress)
            port: \(transport == "tls" ? RegistrarOptions.tlsPort : lab.port)
            transport: \(transport)
            user: netres
            domain: \(lab.registrarAddress)
            password: secret-netres
            \(caFile.map { "tls: { ca-file: \($0), server-name: \(Self.tlsServerName) }" } ?? "")

        """.write(toFile: netresConfig, atomically: true, encoding: .utf8)
        try await lab.start(
            in: lab.client,
            [netres, "run", "--config", netresConfig] + (netresLogLevel.map { ["--log-level", $0] } ?? []),
            output: lab.directory + "/netres-client.log")
        if peer { try await lab.startBaresip(user: "peer") }
        for user in peer ? ["netres", "peer"] : ["netres"] {
            do {
                try await waitFor(seconds: 10) { registered(lab, user: user, after: startedAt) != nil }
            } catch {
                let log = (try? String(contentsOfFile: lab.directory + "/netres-client.log", encoding: .utf8)) ?? ""
                throw BenchError("\(user) did not register within 10 s; netres said: \(log.suffix(2000))")
            }
        }
    }

    /// The first `REGISTERED` of `user` stamped after `instant` (whose Contact contains `contact`).
    func registered(_ lab: SIPLab, user: String, after instant: Double, contact: String = "") -> Double? {
        lab.registrarLog().first {
            $0.kind == "REGISTERED" && $0.user == user && $0.at > instant
                && (contact.isEmpty || $0.contact.contains(contact))
        }?.at
    }

    /// `flaps` × (client link admin-down for `downSeconds`, then up with its default route put back
    /// in the same command, as DHCP or networkd would), measured for `clients` (user, label). Every
    /// wait is bounded by `peerBound` from the link-up: a missing REGISTER is counted, not awaited.
    func runFaults(_ lab: SIPLab, clients: [(user: String, name: String)], flaps: Int) async throws -> [ClientResult] {
        var results = clients.map { ClientResult(name: $0.name) }
        let flapsStart = realtime()
        for _ in 0..<flaps {
            let upAt = try await lab.flapClientLink(downSeconds: downSeconds)
            var line = "flap: up=\(upAt)"
            for (index, client) in clients.enumerated() {
                let remaining = max(0, peerBound - (realtime() - upAt))
                var confirmed: Double?
                try? await waitFor(seconds: remaining) {
                    confirmed = registered(lab, user: client.user, after: upAt)
                    return confirmed != nil
                }
                if let confirmed {
                    results[index].flapRecoveries.append(.microseconds(Int64(((confirmed - upAt) * 1e6).rounded())))
                } else {
                    results[index].flapsWithoutRegister += 1
                }
                line += " \(client.user)=\(confirmed.map { "\($0 - upAt)" } ?? "none")"
            }
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        let log = lab.registrarLog()
        for (index, client) in clients.enumerated() {
            results[index].registerRequests =
                log.filter { $0.kind == "REGISTER" && $0.user == client.user && $0.at > flapsStart }.count
        }
        return results
    }

    /// `addressChanges` address changes, alternating 198.18.1.2 → 198.18.1.3 → 198.18.1.2 …, each
    /// seen by all `clients`: the new address added, the old one deleted and the default route
    /// replaced, in one shell command (three `ip` runs, as before). Each wait is bounded by
    /// `addressChangeBound` from the change; 2 s after the last client, whether `ul.dump` still
    /// holds the old Contact.
    func changeAddress(_ lab: SIPLab, clients: [(user: String, name: String)], into results: inout [ClientResult])
        async throws
    {
        let ns = lab.client.namespace
        let (interface, gateway) = (lab.initial.interface, lab.initial.gateway4)
        let addresses = [lab.initial.ipv4, "198.18.\(lab.link.id).3"]
        for change in 0..<addressChanges {
            let (old, new) = (addresses[change % 2], addresses[(change + 1) % 2])
            let route = "route replace default via \(gateway) dev \(interface) metric \(lab.link.metric)"
            let changeAt = realtime()
            if let gap = addressChangeGap {
                try await lab.ipBatch(
                    ["address add \(new)/24 dev \(interface)"], then: gap,
                    ["address del \(old)/24 dev \(interface)", route])
            } else {
                // Three `ip` runs, as before: the delete lands after one process start-up.
                try shell(
                    "ip -n \(ns) addr add \(new)/24 dev \(interface) && ip -n \(ns) addr del \(old)/24 dev \(interface)"
                        + " && ip -n \(ns) \(route)")
            }
            var line = "address-change: at=\(changeAt) \(old)->\(new)"
            var bound: [Duration?] = []
            for client in clients {
                var confirmed: Double?
                try? await waitFor(seconds: max(0, addressChangeBound - (realtime() - changeAt))) {
                    confirmed = registered(lab, user: client.user, after: changeAt, contact: "@\(new):")
                    return confirmed != nil
                }
                bound.append(confirmed.map { .microseconds(Int64((($0 - changeAt) * 1e6).rounded())) })
                line += " \(client.user)=\(confirmed.map { "\($0 - changeAt)" } ?? "none")"
            }
            try await Task.sleep(for: .seconds(2))
            let contacts = (try? await lab.registrar.contacts()) ?? []
            for (index, client) in clients.enumerated() {
                let removed = !contacts.contains { $0.contains("\(client.user)") && $0.contains("@\(old):") }
                results[index].addressChanges.append((bound[index], removed))
            }
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    /// Prints the Markdown that goes into BENCHMARKS.md.
    func report(floor: [Duration], clients: [ClientResult]) {
        let floorStats = LatencyStats(floor)
        var flapRows: [String] = []
        var changeRows: [String] = []
        var heldRows: [String] = []
        for client in clients {
            // Flap damping holds a return (issue 22: at most ~5 s once the link stays up); a
            // return acted on at once takes milliseconds, so more than 1 s means it was held.
            let held = client.flapRecoveries.filter { $0 > .seconds(1) }
            let undamped = LatencyStats(client.flapRecoveries.filter { $0 <= .seconds(1) })
            let heldStats = LatencyStats(held)
            heldRows.append(
                "| \(client.name) | \(held.count) of \(client.flapRecoveries.count) | \(format1(heldStats.p50 / 1e6)) | "
                    + "\(format1(heldStats.max / 1e6)) | \(format1(undamped.p50)) | \(format1(undamped.max)) |")
            let flaps = LatencyStats(client.flapRecoveries)
            let total = client.flapRecoveries.count + client.flapsWithoutRegister
            let ratio = flaps.count > 0 ? format1(flaps.p50 / floorStats.p50) + "×" : "n/a"
            flapRows.append(
                "| \(client.name) | \(total) | \(flaps.count) | \(format1(flaps.p50)) | \(format1(flaps.p99)) | "
                    + "\(format1(flaps.max)) | \(ratio) | \(client.flapsWithoutRegister) | \(client.registerRequests) |"
            )
            let bound = client.addressChanges.compactMap(\.bound)
            let changes = LatencyStats(bound)
            let each = client.addressChanges.map { $0.bound.map { format1(LatencyStats([$0]).p50 / 1000) } ?? "none" }
            let removed = client.addressChanges.filter(\.oldBindingRemoved).count
            changeRows.append(
                "| \(client.name) | \(client.addressChanges.count) | \(bound.count) | \(format1(changes.p50 / 1000)) | "
                    + "\(format1(changes.max / 1000)) | \(each.joined(separator: ", ")) | \(removed) |")
        }
        print(
            """
            ### Floor: the registrar's REGISTER round trip (µs, capture on the client veth)

            | measurement | n | p50 | p99 | max | vs floor |
            |---|---|---|---|---|---|
            \(floorStats.row("sipp authenticated REGISTER → 200 OK", floor: nil))

            ### Recovery after a client link flap (down \(downSeconds) s; µs from link-up to the 200 OK)

            | client | flaps | re-registered | p50 | p99 | max | p50 vs floor | no REGISTER within \
            \(Int(peerBound)) s | REGISTER requests |
            |---|---|---|---|---|---|---|---|---|
            \(flapRows.joined(separator: "\n"))

            Returns held by flap damping (recovery over 1 s) beside the ones acted on at once:

            | client | held | held p50 (s) | held max (s) | undamped p50 (µs) | undamped max (µs) |
            |---|---|---|---|---|---|
            \(heldRows.joined(separator: "\n"))

            ### Address changes (198.18.1.2 ⇄ 198.18.1.3; ms from the change to the new Contact bound; bound \
            \(Int(addressChangeBound)) s)

            | client | changes | new Contact bound | p50 | max | each | old binding gone 2 s later (`ul.dump`) |
            |---|---|---|---|---|---|---|
            \(changeRows.joined(separator: "\n"))
            """)
    }
}
