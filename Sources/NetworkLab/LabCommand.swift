import ChildProcesses
import Foundation
import Glibc

/// Runs helper programs (`ip`, `nft`, `tc`, `kamcmd`) to completion without a shell, waiting by
/// polling with `Task.sleep` (or through `OffThePool`), so no thread of Swift's shared pool blocks and none ever calls `setns`
/// (namespaces are entered by the child: `ip -n`, `ip netns exec`).
///
/// Invariant: every run is bounded (`timeout`); a child that overruns is killed with its group.
enum LabCommand {
    static let ip = executable("ip")
    static let nft = executable("nft")
    static let tc = executable("tc")
    static let conntrack = executable("conntrack")

    /// The first of the usual system folders holding `name`, or nil.
    static func executable(_ name: String) -> String? {
        ["/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/local/bin"].map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `argv` with `input` on standard input; its standard output, or an error with its standard error.
    @discardableResult
    static func run(
        _ argv: [String], input: String = "", timeout: Duration = .seconds(20), seed: UInt64 = 0
    ) async throws -> String {
        // Named like every lab object (owner PID first), so a killed owner's files are collected too.
        let base = NSTemporaryDirectory() + "\(LabOwnership.prefix)\(getpid())-cmd-\(UInt32.random(in: 0...UInt32.max))"
        let (inPath, outPath, errPath) = (base + ".in", base + ".out", base + ".err")
        defer { for path in [inPath, outPath, errPath] { unlink(path) } }
        _ = FileManager.default.createFile(atPath: inPath, contents: Data(input.utf8))
        let child = try ChildProcess(
            argv, input: inPath, output: outPath, errors: .file(errPath), truncate: true, newProcessGroup: true)
        guard let status = await waitForExit(child.pid, within: timeout) else {
            kill(-child.pid, SIGKILL)
            _ = await reap(child.pid)
            throw NetworkLabError(.timedOut, "\(argv.joined(separator: " ")) ran longer than \(timeout)", seed: seed)
        }
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let errors = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            throw NetworkLabError(
                .commandFailed, "\(argv.joined(separator: " ")) (status \(status)): \(errors.prefix(2000))", seed: seed)
        }
        return output
    }

    /// The blocking form, for clean-up from `deinit` and `gc` only.
    @discardableResult
    static func runBlocking(_ argv: [String]) -> Int32 {
        guard let child = try? ChildProcess(argv, output: "/dev/null", newProcessGroup: true) else { return -1 }
        return child.waitForExit()
    }

    /// Polls `waitpid` (1 ms, growing to 20 ms) until `pid` exits; its raw status, or nil after `timeout`.
    static func waitForExit(_ pid: pid_t, within timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        var pause = Duration.milliseconds(1)
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return status }
            if result < 0 { return -1 }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(20))
        }
    }

    /// Waits until `pid` exits, without holding the caller's thread (`OffThePool`); its raw status.
    static func reap(_ pid: pid_t) async -> Int32 {
        await OffThePool.run(named: "netlab-reap") { blockingReap(pid) }
    }

    /// Blocks until `pid` exits; its raw status. For clean-up from `deinit` and `gc` only: async
    /// code uses ``reap(_:)``.
    static func blockingReap(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// Stops a process group led by `pid`: SIGTERM, SIGKILL to the group after `grace`, then reaps it.
    static func stop(_ pid: pid_t, grace: Duration = .seconds(3)) async {
        kill(pid, SIGTERM)
        if await waitForExit(pid, within: grace) == nil {
            kill(-pid, SIGKILL)
            _ = await reap(pid)
        }
        kill(-pid, SIGKILL)  // children of the group that outlived their leader
    }
}
