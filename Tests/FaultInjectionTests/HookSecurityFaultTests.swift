import Foundation
import NetworkLab
import Testing

/// End to end with the built `netres watch --hooks DIR` in a namespace: planted hooks do not
/// run, what a hook started with `setsid` does not outlive it, and endless output costs neither
/// disk nor memory.
@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct HookSecurityFaultTests {
    @Test func plantedHooksAreSkippedAndLoggedWhileTrustedOnesRun() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: WatchCommandTests.netres), "netres is not built")
        let lab = try HookLab()
        try lab.script("10-world-writable", "echo event=planted-world >> \(lab.records)", mode: 0o777)
        try lab.script("20-group-writable", "echo event=planted-group >> \(lab.records)", mode: 0o775)
        try lab.script("30-record", lab.recordCommand)
        // A link from the hooks directory to a file anyone may rewrite, elsewhere.
        let elsewhere = lab.directory + "/../elsewhere"
        try "#!/bin/sh\necho event=planted-link >> \(lab.records)\n".write(
            toFile: elsewhere, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: lab.directory + "/40-link", withDestinationPath: elsewhere)
        try await lab.withWatch { _, watch in
            _ = try await lab.record { $0["event"] == "initial" }
            #expect(try await watch.terminate() == 0)
        }
        let events = try lab.readRecords().compactMap { $0["event"] }
        #expect(!events.contains { $0.hasPrefix("planted") }, "\(events)")
        let log = try String(contentsOfFile: lab.errorLog, encoding: .utf8)
        #expect(
            log.contains("skipped a hook: it is writable by others (mode 0777)") && log.contains("10-world-writable"))
        #expect(
            log.contains("skipped a hook: it is writable by its group (mode 0775)") && log.contains("20-group-writable")
        )
        #expect(log.contains("40-link") && log.contains("its target"), "\(log)")
    }

    @Test func whatAHookStartedWithSetsidDoesNotOutliveIt() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: WatchCommandTests.netres), "netres is not built")
        let lab = try HookLab()
        // One sleeper in a session of its own, one behind an intermediate that exits at once.
        try lab.script("10-escape", "setsid sleep 600 &\n(setsid sh -c 'sleep 601 & wait' &)\nsleep 0.2")
        try lab.script("20-record", lab.recordCommand)
        try await lab.withWatch(["--log-level", "info"]) { ns, watch in

            _ = try await lab.record { $0["event"] == "initial" }
            // netres still runs: the escaped sleepers were collected when their hook ended.
            // (netres's own command line names the lab's folder: it is not one of them.)
            let escaped = { lab.survivors().filter { $0 != watch.pid } }
            try await lab.waitFor("the escaped sleepers to be gone") { escaped().isEmpty }
            try await ns.setPeer(up: false)
            _ = try await lab.record { $0["event"] == "lost" }
            try await lab.waitFor("the second run's sleepers to be gone") { escaped().isEmpty }
            let log = try String(contentsOfFile: lab.errorLog, encoding: .utf8)
            #expect(log.contains("escaped.killed="), "the sleepers existed and were killed: \(log)")
            #expect(try await watch.terminate() == 0)
            #expect(lab.survivors().isEmpty)
        }
    }

    /// Resident memory of `pid` in KiB, from `/proc/PID/status`.
    func residentKiB(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }

    /// Bytes on disk (allocated blocks) of every file under `root`, links not followed: what the
    /// hook's output could grow there (netres's error log, its records). The file system's free
    /// space is no measure: other processes on the machine write to it at the same time.
    func diskUsage(under root: String) -> UInt64 {
        var total: UInt64 = 0
        var pending = [root]
        var visited = 0
        while let path = pending.popLast(), visited < 10_000 {
            visited += 1
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            total += UInt64(max(info.st_blocks, 0)) * 512
            guard info.st_mode & UInt32(S_IFMT) == UInt32(S_IFDIR),
                let names = try? FileManager.default.contentsOfDirectory(atPath: path)
            else { continue }
            pending += names.map { path + "/" + $0 }
        }
        return total
    }

    @Test func aHookPrintingWithoutEndCostsNeitherDiskNorMemory() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: WatchCommandTests.netres), "netres is not built")
        let lab = try HookLab()
        try lab.script("20-record", lab.recordCommand)
        try await lab.withWatch(["--hook-timeout", "2s"]) { ns, watch in
            _ = try await lab.record { $0["event"] == "initial" }
            let memoryBefore = try #require(residentKiB(watch.pid))
            let diskBefore = diskUsage(under: lab.root)

            try lab.script("10-flood", "exec yes netres-flood-line")
            try await ns.setPeer(up: false)
            _ = try await lab.record { $0["event"] == "lost" }
            let memoryAfter = try #require(residentKiB(watch.pid))
            let diskAfter = diskUsage(under: lab.root)
            let log = try String(contentsOfFile: lab.errorLog, encoding: .utf8)
            let printed = log.firstMatch(of: /output\.bytes=(\d+)/).flatMap { UInt64($0.1) } ?? 0
            #expect(printed > 1_000_000, "the hook printed megabytes in its 2 s: \(printed) bytes")
            #expect(log.contains("netres-flood-line"), "its last lines are logged")
            #expect(memoryAfter < memoryBefore + 32 * 1024, "RSS \(memoryBefore) KiB → \(memoryAfter) KiB")
            // What netres keeps of the output (its last lines in the error log) is a sliver of it.
            #expect(
                diskAfter < diskBefore + min(1024 * 1024, printed / 10),
                "the lab's files grew from \(diskBefore) to \(diskAfter) bytes while the hook printed \(printed)")
            #expect(try await watch.terminate() == 0)
            #expect(lab.survivors().isEmpty)
        }
    }
}

extension HookLab {
    /// Runs `body` with `netres watch --hooks` on this lab's directory (hold-down 0, standard error
    /// to ``errorLog``) in the client of a fresh ``OnlineLab``.
    func withWatch(
        _ extra: [String] = [], _ body: (OnlineLab, WatchProcess) async throws -> Void
    ) async throws {
        try await OnlineLab.with { ns in
            let watch = try await WatchProcess.start(
                in: ns, arguments: ["watch", "--hooks", directory, "--hold-down", "0"] + extra, errorLog: errorLog)
            try await body(ns, watch)
        }
    }
}
