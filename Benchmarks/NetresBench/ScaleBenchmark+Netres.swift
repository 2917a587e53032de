import Foundation
import NetworkLab

extension ScaleBenchmark {
    /// Runs `netres run` with `count` accounts (users `n<count>u<i>`, background app state), and
    /// prints its start-up, cost, idle and flap figures beside `floor` and the idle processes
    /// `idle` measures (its first pid is netres's).
    func measureNetres(
        _ lab: SIPLab, count: Int, netres: String, floor: Phase, idle: (Int32) -> [IdleCost]
    ) async throws {
        let prefix = "n\(count)u"
        let config = lab.directory + "/netres-\(count).yaml"
        var text = """
            log-format: json
            control-socket: \(lab.directory)/netres-\(count).sock
            interfaces: [\(lab.initial.interface)]
            hold-down: 0
            app-state: background

            """
        if let ceiling = registerRateCeiling { text += "register-rate-ceiling: \(ceiling)\n" }
        text += "accounts:\n"
        for index in 0..<count {
            text += """
                  - { name: \(prefix)\(index), registrar: \(lab.registrarAddress), port: \(lab.port), \
                transport: udp, user: \(prefix)\(index), domain: \(lab.registrarAddress), \
                password: secret-\(prefix)\(index), expires: \(expires) }

                """
        }
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let bound = 60 + Double(count) / 20
        let dropsAtStart = try await lab.registrarDrops()
        let startedAt = realtime()
        let child = try await lab.start(
            in: lab.client, [netres, "run", "--config", config], output: lab.directory + "/netres-\(count).log")
        do {
            try await measureNetres(
                lab, child, count: count, config: (prefix, bound, startedAt, dropsAtStart), floor: floor, idle: idle)
        } catch {
            await lab.stop(child, signal: SIGKILL)
            throw error
        }
        await lab.stop(child, signal: SIGKILL)
    }

    /// The figures of the running `netres run` (`child`) of ``measureNetres(_:count:netres:floor:idle:)``.
    private func measureNetres(
        _ lab: SIPLab, _ child: pid_t, count: Int,
        config: (prefix: String, bound: Double, startedAt: Double, dropsAtStart: Int), floor: Phase,
        idle: (Int32) -> [IdleCost]
    ) async throws {
        let (prefix, bound, startedAt, dropsAtStart) = config
        let startUp = try await waitForAll(lab, prefix: prefix, count: count, after: startedAt, bound: bound)
        let startUpDrops = try await lab.registrarDrops() - dropsAtStart
        let cpuAtBound = IdleMeter.cpuTime(pid: child)
        let status = IdleMeter.parseStatus(path: "/proc/\(child)/status")
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(child)/fd").count) ?? -1
        try await Task.sleep(for: .seconds(5))  // the start-up's last transactions and idle worker threads settle
        let clientDropsBefore = try await lab.clientDrops()
        let quiet = idle(child)
        let withRefresh = idle(child)
        let refreshDrops = try await lab.clientDrops() - clientDropsBefore
        let refreshes = lab.registrarLog().filter {
            $0.kind == "REGISTERED" && $0.user.hasPrefix(prefix) && $0.at > startedAt + startUp
        }.count
        let dropsBefore = try await lab.registrarDrops()
        // `NETRES_BENCH_PERF=FILE`: a `perf record` of netres over the flap, for finding its costs.
        let perf = try ProcessInfo.processInfo.environment["NETRES_BENCH_PERF"].map {
            try Spawned(["/usr/bin/perf", "record", "-F", "999", "-g", "-p", "\(child)", "-o", "\($0)-\(count)"])
        }
        let upAt = try await lab.flapClientLink(downSeconds: 3)
        let recovery = try await waitForAll(lab, prefix: prefix, count: count, after: upAt, bound: bound)
        perf?.stop(signal: SIGINT, grace: .seconds(10))
        let flapLog = lab.registrarLog()
        let flapDrops = try await lab.registrarDrops() - dropsBefore
        let flapClientDrops = try await lab.clientDrops() - clientDropsBefore - refreshDrops
        let flap = span(flapLog, prefix: prefix, count: count, after: upAt, drops: flapDrops)
        let flapRequests = flapLog.filter {
            $0.kind == "REGISTER" && $0.user.hasPrefix(prefix) && $0.at > upAt
        }.count

        print("### `netres run` with \(count) background UDP accounts\n")
        print("| figure | value |")
        print("|---|---|")
        print(
            "| `register-rate-ceiling` | \(registerRateCeiling.map { "\($0) REGISTERs/s" } ?? "the daemon's default") |"
        )
        print(
            "| start → all \(count) bound | \(format3(startUp)) s (\(startUpDrops) datagrams dropped at the registrar) |"
        )
        print(
            "| RSS once bound | \(status["VmRSS"] ?? -1) KiB (\((status["VmRSS"] ?? 0) / max(count, 1)) KiB per account) |"
        )
        let cpuMs = Double(cpuAtBound.components.seconds) * 1000 + Double(cpuAtBound.components.attoseconds) / 1e15
        print("| CPU to all bound | \(format1(cpuMs)) ms (\(format3(cpuMs / Double(max(count, 1)))) ms per account) |")
        print("| open descriptors | \(descriptors) |")
        print("| link up → last 200 OK | \(format3(recovery)) s |")
        print("| first REGISTER → last 200 OK after the flap | \(flap.seconds.map { format3($0) + " s" } ?? "—") |")
        if let floorSeconds = floor.seconds, let seconds = flap.seconds {
            print(
                "| … against sipp's floor (\(format3(floorSeconds)) s, same users' count) | \(format1(seconds / floorSeconds))× |"
            )
        }
        print("| REGISTERs the registrar saw after the flap | \(flapRequests) (\(count) users) |")
        print("| datagrams dropped at the registrar during the flap | \(flap.drops) |")
        print("| datagrams dropped at netres's sockets: idle windows, flap | \(refreshDrops), \(flapClientDrops) |")
        print("")
        print("Wake-ups (context switches, all threads) over the same \(idleSeconds) s windows:\n")
        print(
            "| process | window without a refresh: per minute | window with the refresh of \(refreshes) bindings: per minute | CPU (both windows) |"
        )
        print("|---|---|---|---|")
        let labels = [
            "`netres run`, \(count) accounts, background", "baseline: Swift program awaiting an empty AsyncStream",
            "baseline with the runtime taken off libdispatch (`idle-baseline quiet`)",
            "baresip 1.0 (Debian), 1 account",
        ]
        for (index, label) in labels.enumerated() {
            let cpu = quiet[index].cpu + withRefresh[index].cpu
            print(
                "| \(label) | \(format1(quiet[index].perMinute)) | \(format1(withRefresh[index].perMinute)) | \(cpu) |")
        }
        print("")
    }

    /// Seconds from `after` until every user `prefix<i>` got a 200 OK stamped after it; throws
    /// past `bound` seconds. Polls the registrar's log every 200 ms.
    private func waitForAll(
        _ lab: SIPLab, prefix: String, count: Int, after: Double, bound: Double
    ) async throws -> Double {
        var seconds: Double?
        _ = await eventually(within: .milliseconds(Int64(bound * 1000)), every: .milliseconds(200)) {
            let bound = lab.registrarLog().filter {
                $0.kind == "REGISTERED" && $0.user.hasPrefix(prefix) && $0.at > after
            }
            if Set(bound.map(\.user)).count >= count, let last = bound.map(\.at).max() { seconds = last - after }
            return seconds != nil
        }
        guard let seconds else { throw BenchError("not all \(count) accounts \(prefix)… bound within \(Int(bound)) s") }
        return seconds
    }
}
