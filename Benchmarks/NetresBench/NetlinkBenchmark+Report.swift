import ChildProcesses
import Foundation
import NetworkLab

extension NetlinkBenchmark {
    /// Starts the built `netres watch --json` and, beside it, the baseline — this executable doing
    /// nothing but awaiting an empty `AsyncStream` (the Swift runtime's own idle cost: libdispatch
    /// on Linux wakes its worker-pool monitor about once a second) — lets both settle, then counts
    /// their context switches (every thread) over the same `idleSeconds` of an unchanging network.
    func measureIdle() throws -> (watch: IdleCost, baseline: IdleCost) {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let watch = try Spawned([directory.appendingPathComponent("netres").path, "watch", "--json"], quiet: true)
        let baseline = try Spawned([directory.appendingPathComponent("netres-bench").path, "idle-baseline"])
        defer {
            for child in [watch, baseline] {
                kill(child.pid, SIGTERM)
                _ = try? child.wait()
            }
        }
        sleep(10)  // start-up done and idle worker threads reaped
        let costs = IdleMeter.measure([watch.pid, baseline.pid], seconds: idleSeconds)
        return (costs[0], costs[1])
    }

    /// Prints the Markdown that goes into BENCHMARKS.md.
    func report(admin: Samples, carrier: Samples, idle: IdleCost, baseline: IdleCost) {
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

            ### `netres watch` at rest (\(idle.seconds) s, nothing changing)

            | process | wake-ups (context switches, all threads) | per minute | VmRSS | VmHWM |
            |---|---|---|---|---|
            \(idle.row("`netres watch --json`"))
            \(baseline.row("baseline: a Swift program awaiting an empty AsyncStream"))
            """)
    }
}

extension IdleCost {
    func row(_ label: String) -> String {
        "| \(label) | \(wakeups) | \(format1(perMinute)) | \(residentKiB) KiB | \(peakResidentKiB) KiB |"
    }
}

/// Runs a command through `/bin/sh -c` and fails on a non-zero exit.
func shell(_ command: String) throws {
    let status = try Spawned(["/bin/sh", "-c", command]).wait()
    guard status == 0 else { throw BenchError("`\(command)` exited \(status)") }
}

/// A child process of the bench (``ChildProcess``, with the bench's exit-status and stop helpers).
struct Spawned {
    let pid: pid_t

    /// - Parameters:
    ///   - quiet: standard output to /dev/null.
    ///   - output: standard output and error appended to this file (overrides `quiet`).
    ///   - newGroup: the child leads a new process group, so `kill(-pid, …)` reaches its children.
    /// Without `output` the child writes where the bench does; its standard input is /dev/null.
    init(_ argv: [String], quiet: Bool = false, output: String? = nil, newGroup: Bool = false) throws {
        do {
            pid =
                try ChildProcess(
                    argv, output: output ?? (quiet ? "/dev/null" : nil), errors: output == nil ? .inherited : .output,
                    newProcessGroup: newGroup
                ).pid
        } catch {
            throw BenchError("\(error)")
        }
    }

    /// Waits for the exit; returns the exit status (128 + signal when killed).
    func wait() throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchError("waitpid: \(String(cString: strerror(errno)))") }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Ends the child by PID: `signal` now, SIGKILL to it (and its group) after `grace`; reaps it.
    func stop(signal: Int32 = SIGTERM, grace: Duration = .seconds(3)) {
        kill(pid, signal)
        let deadline = ContinuousClock.now + grace
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(20_000)
        }
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
    }
}

/// Re-runs this executable inside a NetworkLab host of its own (a veth pair `nrb0`/`nrb0p` with
/// both ends in it, `nrb0` on 198.18.1.2/24 with an IPv4 default route via an on-link gateway),
/// standard output and error passed through; the lab removes the host afterwards, also when the
/// run fails. Returns false when already inside (the caller then does the work).
func runInsideOwnNamespace(arguments: [String]) async throws -> Bool {
    guard ProcessInfo.processInfo.environment["NETRES_BENCH_NAMESPACE"] == nil else { return false }
    guard NetworkLab.isSupported else {
        throw BenchError("the netlink benchmark needs root and iproute2 (it creates a network namespace)")
    }
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    try await withNetworkLab { lab in
        let host = try await lab.addHost("bench")
        // Both ends in one host: the benchmark's changer flips the peer end with its own socket.
        let link = try await lab.connect(host, to: host, as: "nrb0", defaultRoute: false)
        let plan = await lab.addresses(of: link)
        // An on-link gateway that is not a local address (the peer end's .1 is local here).
        let gateway = plan.ipv4.split(separator: ".").dropLast().joined(separator: ".") + ".254"
        try await lab.ip(in: host, ["route add default via \(gateway) dev \(plan.interface)"])
        let pid = try await lab.spawn(
            in: host,
            ["/usr/bin/env", "NETRES_BENCH_NAMESPACE=\(host.namespace)", "NETRES_BENCH_GATEWAY=\(gateway)", me]
                + arguments, output: nil)
        var status: Int32?
        // A hang guard (3 h), not a limit: each change is bounded by the benchmark itself.
        _ = await eventually(within: .seconds(3 * 3600), every: .milliseconds(200)) {
            status = await lab.exitStatus(of: pid)
            return status != nil
        }
        guard status == 0 else { throw BenchError("benchmark ended with wait status \(status ?? -1)") }
    }
    return true
}
