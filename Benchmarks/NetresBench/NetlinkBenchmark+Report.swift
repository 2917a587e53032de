import Foundation

extension NetlinkBenchmark {
    /// What `netres watch` costs while nothing changes.
    struct IdleCost {
        var seconds: Int
        var wakeups: Int
        var residentKiB: Int
        var peakResidentKiB: Int
    }

    /// Starts the built `netres watch --json`, lets it settle, then counts its context switches
    /// (every thread, voluntary and not) over `idleSeconds` of an unchanging network.
    func measureIdleWatch() throws -> IdleCost {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("netres")
        let watch = Process()
        watch.executableURL = executable
        watch.arguments = ["watch", "--json"]
        watch.standardOutput = FileHandle.nullDevice
        try watch.run()
        defer {
            watch.terminate()
            watch.waitUntilExit()
        }
        sleep(2)
        let before = contextSwitches(pid: watch.processIdentifier)
        sleep(UInt32(idleSeconds))
        let after = contextSwitches(pid: watch.processIdentifier)
        let status = procStatus(pid: watch.processIdentifier)
        return IdleCost(
            seconds: idleSeconds, wakeups: after - before, residentKiB: status["VmRSS"] ?? -1,
            peakResidentKiB: status["VmHWM"] ?? -1)
    }

    private func contextSwitches(pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, tid in
            let status = parseStatus(path: "/proc/\(pid)/task/\(tid)/status")
            return total + (status["voluntary_ctxt_switches"] ?? 0) + (status["nonvoluntary_ctxt_switches"] ?? 0)
        }
    }

    private func procStatus(pid: Int32) -> [String: Int] { parseStatus(path: "/proc/\(pid)/status") }

    private func parseStatus(path: String) -> [String: Int] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let number = Int(parts[1].split(separator: " ").first ?? "") else { continue }
            fields[String(parts[0])] = number
        }
        return fields
    }

    /// Prints the Markdown that goes into BENCHMARKS.md.
    func report(admin: Samples, carrier: Samples, idle: IdleCost) {
        let adminFloor = LatencyStats(admin.floor)
        let carrierFloor = LatencyStats(carrier.floor)
        print(
            """
            ### Detection latency (µs from the RTM_NEWLINK request; ratio = p50 / floor p50)

            | change → reader | n | p50 | p99 | max | vs floor |
            |---|---|---|---|---|---|
            \(adminFloor.row("admin down/up → floor (bare netlink socket)", floor: nil))
            \(LatencyStats(admin.raw).row("admin down/up → `events()` subscriber", floor: adminFloor))
            \(carrierFloor.row("carrier loss/return → floor (bare netlink socket)", floor: nil))
            \(LatencyStats(carrier.raw).row("carrier loss/return → `events()` subscriber", floor: carrierFloor))
            \(LatencyStats(carrier.transition).row("carrier loss/return → `transitions()` (lost/restored)", floor: carrierFloor))

            Changes not seen by every reader within 1 s: admin \(admin.missed), carrier \(carrier.missed).

            ### `netres watch` at rest

            | measure | value |
            |---|---|
            | wake-ups (context switches, all threads) over \(idle.seconds) s | \(idle.wakeups) |
            | wake-ups per minute | \(format1(Double(idle.wakeups) * 60 / Double(max(idle.seconds, 1)))) |
            | resident memory (VmRSS) | \(idle.residentKiB) KiB |
            | peak resident memory (VmHWM) | \(idle.peakResidentKiB) KiB |
            """)
    }
}

/// Runs a command through `/bin/sh -c` and fails on a non-zero exit.
func shell(_ command: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", command]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("`\(command)` exited \(process.terminationStatus)") }
}

/// Re-runs this executable inside a fresh network namespace and removes the namespace afterwards,
/// also when the run fails. Returns false when already inside (the caller then does the work).
func runInsideOwnNamespace(arguments: [String]) throws -> Bool {
    guard ProcessInfo.processInfo.environment["NETRES_BENCH_NAMESPACE"] == nil else { return false }
    guard getuid() == 0 else { throw BenchError("the netlink benchmark needs root (it creates a network namespace)") }
    let namespace = "nrbench-\(getpid())"
    try shell("ip netns add \(namespace)")
    defer { try? shell("ip netns delete \(namespace)") }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    process.arguments = ["netns", "exec", namespace, "env", "NETRES_BENCH_NAMESPACE=\(namespace)", me] + arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("benchmark exited \(process.terminationStatus)") }
    return true
}
