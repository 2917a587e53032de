import CProcessControl
import ChildProcesses
internal import Foundation
internal import Glibc
import Logging
import ResilienceCore

/// One hook's run: listing, checking, spawning, waiting with a deadline, logging.
///
/// Invariants: a hook runs only when ``HookTrust`` accepts it and its directory; its output goes
/// through a pipe into an ``OutputTail`` (memory bounded, no file); when it ends, its process
/// group is killed, and in a subreaper (``ProcessTree``) every descendant that escaped the group.
struct HookRun: Sendable {
    let directory: String
    let timeout: Duration
    let logger: Logger
    let trust = HookTrust()

    /// Trusted executable files of the directory, not hidden, sorted by name; listed anew each
    /// time. Every other visible entry is skipped with a log line saying why.
    func hooks() -> [String] {
        if let why = trust.refusal(directory: directory) {
            logger.warning("hooks: skipped every hook: \(why)", metadata: ["directory": "\(directory)"])
            return []
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            logger.warning("hooks: cannot list the directory", metadata: ["directory": "\(directory)"])
            return []
        }
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory + "/" + $0 }.filter { path in
            guard let why = trust.refusal(hook: path) else { return true }
            logger.warning("hooks: skipped a hook: \(why)", metadata: ["hook": "\(path)"])
            return false
        }
    }

    /// Runs `path` to its end or its timeout and logs how it ended.
    func run(_ path: String, environment: [String: String]) async {
        var metadata: Logger.Metadata = ["hook": "\(path)", "event": "\(environment["NETRES_EVENT"] ?? "")"]
        var ends: [Int32] = [-1, -1]
        guard cprocess_pipe_cloexec(&ends) == 0 else {
            logger.error("hooks: cannot create an output pipe", metadata: metadata)
            return
        }
        let output = ends[0]
        defer { close(output) }
        _ = fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK)
        let child: ChildProcess
        do {
            defer { close(ends[1]) }
            child = try ChildProcess(
                [path], output: nil, newProcessGroup: true, environment: environment, outputDescriptor: ends[1])
        } catch {
            metadata["error"] = "\(error)"
            logger.error("hooks: cannot start the hook", metadata: metadata)
            return
        }
        var tail = OutputTail(capacity: HookRunner.loggedBytes)
        let status = await wait(for: child, until: .now + timeout, draining: output, into: &tail)
        Self.drain(output, into: &tail)
        if ProcessTree.isSubreaper {
            let collected = await ProcessTree.sweepOrphans()
            if collected > 0 { metadata["escaped.killed"] = "\(collected)" }
        }
        let text = tail.lastLines(HookRunner.loggedLines)
        if !text.isEmpty { metadata["output"] = "\(text)" }
        if tail.total > UInt64(tail.capacity) { metadata["output.bytes"] = "\(tail.total)" }
        switch status {
        case nil:
            metadata["timeout"] = "\(DurationText.format(timeout))"
            logger.warning("hooks: hook timed out and was killed", metadata: metadata)
        case let status? where status == 0:
            logger.info("hooks: hook ran", metadata: metadata)
        case let status?:
            metadata["status"] = "\(Self.describe(status))"
            logger.warning("hooks: hook failed", metadata: metadata)
        }
    }

    /// The child's raw wait status, or nil when it ran past `deadline` and was killed (reaped).
    /// Waits on events (``ChildExitWait``), never on a timer, and never on the caller's thread: a
    /// SIGKILLed child is reaped through `OffThePool` (one stuck in an uninterruptible sleep
    /// dies only when that sleep ends).
    private func wait(
        for child: ChildProcess, until deadline: ContinuousClock.Instant, draining output: Int32,
        into tail: inout OutputTail
    ) async -> Int32? {
        var waited = await ChildExitWait.exited(child, until: deadline, draining: output, into: tail)
        tail = waited.tail
        if waited.exited { return Self.reap(child) }
        kill(-child.pid, SIGTERM)
        waited = await ChildExitWait.exited(
            child, until: .now + HookRunner.killGrace, draining: output, into: tail)
        tail = waited.tail
        if waited.exited {
            _ = Self.reap(child)
            return nil
        }
        kill(-child.pid, SIGKILL)
        _ = await OffThePool.run(named: "netres-hook-reap") { child.waitForExit() }
        return nil
    }

    /// Reaps a child that has exited (`waitpid` returns at once). Before that, whatever it left
    /// in its process group is killed (the group id cannot have been reused yet).
    private static func reap(_ child: ChildProcess) -> Int32 {
        kill(-child.pid, SIGKILL)
        return child.waitForExit()
    }

    /// Most reads of one drain: bounds the work per poll whatever the hook prints.
    static let drainReads = 64

    /// Reads what the non-blocking pipe `fd` holds (at most ``drainReads`` chunks) into `tail`.
    static func drain(_ fd: Int32, into tail: inout OutputTail) {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        for _ in 0..<drainReads {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            tail.append(chunk[..<count])
        }
    }

    /// `exit 3`, `signal 9`.
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        return signal == 0 ? "exit \((status >> 8) & 0xff)" : "signal \(signal)"
    }
}
