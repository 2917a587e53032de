import Foundation
import NetworkLab
import Testing

/// End to end: the built `netres watch --hooks DIR` runs inside a namespace while the test flaps
/// its link; hook scripts append what they saw to a file the test reads.
@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct HookFaultTests {
    @Test func hooksSeeInitialLostAndRestoredWithOnlyTheirOwnEnvironment() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: WatchCommandTests.netres), "netres is not built")
        let lab = try HookLab()
        try lab.script("10-record", lab.recordCommand)
        try lab.script(".20-hidden", "echo event=hidden >> \(lab.records)")
        try lab.script("30-not-executable", "echo event=not-executable >> \(lab.records)", mode: 0o644)
        try FileManager.default.createDirectory(
            atPath: lab.directory + "/40-directory", withIntermediateDirectories: false)
        // IPv4 only, as the exact address list below expects.
        try await OnlineLab.with(ipv6: false) { ns in
            let watch = try await WatchProcess.start(
                in: ns, arguments: ["watch", "--hooks", lab.directory, "--hold-down", "0"])

            let initial = try await lab.record { $0["event"] == "initial" }
            #expect(initial["status"] == "satisfied")
            #expect(initial["reason"] == "" && initial["change"] == "" && initial["downtime"] == "")
            #expect(initial["interface"] == "veth0")
            #expect(initial["ifindex"].flatMap { Int($0) } != nil)
            #expect(initial["addresses"] == "198.18.1.2/24")
            #expect(initial["time"]?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z/) != nil)
            #expect(initial["path"] == "/usr/sbin:/usr/bin:/sbin:/bin", "PATH is the default, not inherited")
            #expect(initial["home"] == "unset", "nothing of netres's own environment is inherited")

            try await ns.setPeer(up: false)
            let lost = try await lab.record { $0["event"] == "lost" }
            #expect(lost["reason"] == "no-carrier")
            #expect(lost["status"] == "unsatisfied")
            #expect(lost["interface"] == "veth0")

            try await ns.setPeer(up: true)
            let restored = try await lab.record { $0["event"] == "restored" }
            #expect(restored["status"] == "satisfied")
            #expect(restored["downtime"].flatMap { Int($0) }.map { $0 >= 0 } == true)

            #expect(try await watch.terminate() == 0)
            let events = try lab.readRecords().compactMap { $0["event"] }
            #expect(events.filter { ["initial", "lost", "restored"].contains($0) } == ["initial", "lost", "restored"])
            #expect(!events.contains("hidden") && !events.contains("not-executable"), "only visible executables run")
            #expect(lab.survivors().isEmpty)
        }
    }

    @Test func aHangingHookIsKilledAndAFailingOneIsLoggedWhileLaterHooksStillRun() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: WatchCommandTests.netres), "netres is not built")
        let lab = try HookLab()
        try lab.script("10-hang", "sleep 600")
        try lab.script("20-fail", "echo failing on purpose; exit 3")
        try lab.script("30-record", lab.recordCommand)
        // IPv4 only, as the exact address list below expects.
        try await OnlineLab.with(ipv6: false) { ns in
            let watch = try await WatchProcess.start(
                in: ns,
                arguments: ["watch", "--hooks", lab.directory, "--hook-timeout", "1s", "--hold-down", "0"],
                errorLog: lab.errorLog)

            _ = try await lab.record { $0["event"] == "initial" }
            try await ns.setPeer(up: false)
            _ = try await lab.record { $0["event"] == "lost" }
            let log = try String(contentsOfFile: lab.errorLog, encoding: .utf8)
            #expect(log.contains("hook timed out and was killed") && log.contains("10-hang"))
            #expect(log.contains("hook failed") && log.contains("exit 3"))
            #expect(log.contains("failing on purpose"), "the hook's output is logged")

            // Stopping while a hook hangs: netres waits out its timeout, kills it and exits.
            try await ns.setPeer(up: true)
            try await lab.waitFor("the hanging hook to start again") { lab.survivors().count >= 1 }
            #expect(try await watch.terminate() == 0)
            #expect(lab.survivors().isEmpty, "no hook process outlives netres watch")
        }
    }

    @Test func transitionsArrivingWhileHooksRunCollapseToTheNewest() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: WatchCommandTests.netres), "netres is not built")
        let lab = try HookLab()
        try lab.script("10-slow", "sleep 1\n" + lab.recordCommand)
        // IPv4 only, as the exact address list below expects.
        try await OnlineLab.with(ipv6: false) { ns in
            let watch = try await WatchProcess.start(
                in: ns,
                arguments: ["watch", "--hooks", lab.directory, "--hold-down", "0", "--log-level", "info"],
                errorLog: lab.errorLog)
            _ = try await lab.record { $0["event"] == "initial" }

            for _ in 0..<5 {
                try await ns.setPeer(up: false)
                try await Task.sleep(for: .milliseconds(50))
                try await ns.setPeer(up: true)
                try await Task.sleep(for: .milliseconds(50))
            }
            // Quiet: no new run for 2.5 s (a run takes 1 s), within 20 s.
            var runs = try lab.readRecords()
            var unchanged = 0
            for _ in 0..<200 where unchanged < 25 {
                try await Task.sleep(for: .milliseconds(100))
                let now = try lab.readRecords()
                unchanged = now.count == runs.count ? unchanged + 1 : 0
                runs = now
            }
            #expect(runs.count < 10, "11 transitions ran hooks fewer than 10 times: \(runs)")
            #expect(runs.last?["event"] == "restored" && runs.last?["status"] == "satisfied", "\(runs)")
            #expect(try String(contentsOfFile: lab.errorLog, encoding: .utf8).contains("coalesced"))
            #expect(try await watch.terminate() == 0)
            #expect(lab.survivors().isEmpty)
        }
    }
}

/// A temporary hooks directory, the file its scripts record to, and the processes they left.
///
/// Every script exports a marker unique to the lab, so its processes (and their children) are
/// found in `/proc` and killed by `deinit` even when the test failed.
final class HookLab {
    let directory: String
    let records: String
    let errorLog: String
    /// The lab's folder: ``directory``, ``records`` and ``errorLog`` are inside.
    let root: String
    private let marker = "netres-hook-lab-\(UUID().uuidString)"

    init() throws {
        root = "/tmp/" + marker
        directory = root + "/hooks.d"
        records = root + "/records.tsv"
        errorLog = root + "/stderr.log"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        for pid in survivors() { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A shell line appending the hook's view of the transition as tab-separated `key=value`s.
    var recordCommand: String {
        let keys = [
            ("event", "NETRES_EVENT"), ("reason", "NETRES_REASON"), ("change", "NETRES_CHANGE"),
            ("status", "NETRES_STATUS"), ("interface", "NETRES_INTERFACE"), ("ifindex", "NETRES_IFINDEX"),
            ("addresses", "NETRES_ADDRESSES"), ("downtime", "NETRES_DOWNTIME_MS"), ("time", "NETRES_TIME"),
            ("path", "PATH"),
        ]
        let format = (keys.map { "\($0.0)=%s" } + ["home=%s"]).joined(separator: "\\t")
        let values = keys.map { "\"$\($0.1)\"" } + ["\"${HOME-unset}\""]
        return "printf '\(format)\\n' \(values.joined(separator: " ")) >> \(records)"
    }

    /// Writes an executable `/bin/sh` script (unless `mode` says otherwise).
    func script(_ name: String, _ body: String, mode: Int = 0o755) throws {
        let path = directory + "/" + name
        try "#!/bin/sh\nexport NETRES_TEST_MARK=\(marker)\n\(body)\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    /// Every recorded line, parsed.
    func readRecords() throws -> [[String: String]] {
        guard FileManager.default.fileExists(atPath: records) else { return [] }
        return try String(contentsOfFile: records, encoding: .utf8).split(separator: "\n").map { line in
            Dictionary(
                line.split(separator: "\t", omittingEmptySubsequences: false).map { field in
                    let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
                }, uniquingKeysWith: { $1 })
        }
    }

    /// The first record that matches, waiting up to 15 s for it.
    func record(_ matches: ([String: String]) -> Bool) async throws -> [String: String] {
        var found: [String: String]?
        _ = try await eventually(within: .seconds(15), every: .milliseconds(10)) {
            found = try readRecords().first(where: matches)
            return found != nil
        }
        guard let found else {
            throw NetworkLabError(.timedOut, "no matching record in 15 s; got \(try readRecords())")
        }
        return found
    }

    /// Waits up to 10 s for `condition`.
    func waitFor(_ what: String, _ condition: () -> Bool) async throws {
        guard await eventually(within: .seconds(10), every: .milliseconds(10), condition) else {
            throw NetworkLabError(.timedOut, "timed out waiting for \(what)")
        }
    }

    /// Processes started by this lab's scripts: a script's shell (its command line names a file of
    /// the directory; netres's own names only the directory) or anything that inherited the marker.
    func survivors() -> [pid_t] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { pid_t($0) } ?? []
        return pids.filter { pid in
            for file in ["cmdline", "environ"] {
                guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)") else { continue }
                let text = String(decoding: data, as: UTF8.self)
                if text.contains(directory + "/") || text.contains(marker) { return true }
            }
            return false
        }
    }
}
