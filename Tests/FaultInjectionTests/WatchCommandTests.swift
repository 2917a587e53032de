import Foundation
import Glibc
import NetworkLab
import Testing

/// End to end: the built `netres watch --json --raw` runs inside a namespace while the test
/// changes links there; its JSON Lines are parsed and checked.
@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct WatchCommandTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static let keys: Set<String> = [
        "ts", "mono_ns", "seq", "kind", "event", "iface", "ifindex", "from", "to", "reason", "addresses",
        "synthesized", "downtime_ms",
    ]

    @Test func watchPrintsEveryTransitionAsAJSONLine() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.netres), "netres is not built next to the tests")
        // IPv4 only, as the exact address lists below expect.
        try await OnlineLab.with(ipv6: false) { ns in
            let watch = try await WatchProcess.start(
                in: ns, arguments: ["watch", "--json", "--raw", "--hold-down", "0"])

            let initial = try await watch.line { $0["kind"] as? String == "transition" }
            #expect(initial["event"] as? String == "initial")
            #expect(initial["to"] as? String == "satisfied")
            #expect(initial["iface"] as? String == "veth0")
            #expect(initial["addresses"] as? [String] == ["198.18.1.2/24"])

            var mark = watch.mark
            try await ns.setPeer(up: false)
            let carrier = try await watch.line(since: mark) {
                $0["event"] as? String == "link-changed" && $0["iface"] as? String == "veth0"
            }
            #expect(carrier["reason"] as? String == "carrier")
            #expect(carrier["from"] as? String == "carrier")
            #expect(carrier["to"] as? String == "no-carrier")
            let lost = try await watch.line(since: mark) { $0["event"] as? String == "lost" }
            #expect(lost["reason"] as? String == "no-carrier")
            #expect(lost["iface"] as? String == "veth0")

            mark = watch.mark
            try await ns.setPeer(up: true)
            let restored = try await watch.line(since: mark) { $0["event"] as? String == "restored" }
            #expect((restored["downtime_ms"] as? Int).map { $0 >= 0 } == true)

            mark = watch.mark
            try await ns.ip("addr add 198.18.1.9/24 dev veth0")
            let added = try await watch.line(since: mark) { $0["event"] as? String == "address-added" }
            #expect(added["addresses"] as? [String] == ["198.18.1.9/24"])
            #expect(added["iface"] as? String == "veth0")
            let changed = try await watch.line(since: mark) { $0["event"] as? String == "changed" }
            #expect(changed["reason"] as? String == "address")

            mark = watch.mark
            try await ns.ip("link set veth0 down")
            let adminLost = try await watch.line(since: mark) { $0["event"] as? String == "lost" }
            #expect(adminLost["reason"] as? String == "admin-down")

            let status = try await watch.terminate()
            #expect(status == 0, "netres watch exits 0 on SIGTERM")
            let lines = watch.lines
            for line in lines { #expect(Set(line.keys) == Self.keys, "every line carries exactly the stable keys") }
            let rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/
            #expect(lines.allSatisfy { ($0["ts"] as? String)?.wholeMatch(of: rfc3339) != nil })
            let transitionSeqs = lines.filter { $0["kind"] as? String == "transition" }.compactMap { $0["seq"] as? Int }
            #expect(transitionSeqs == Array(1...transitionSeqs.count), "transition seq counts from 1 without gaps")
            for kind in ["transition", "event"] {
                let monotonic = lines.filter { $0["kind"] as? String == kind }.compactMap { $0["mono_ns"] as? Int }
                #expect(monotonic == monotonic.sorted(), "mono_ns never goes back within the \(kind) stream")
            }
        }
    }
}

/// `netres ARGUMENTS` started by the lab in an ``OnlineLab``'s client, its standard output (a file
/// of the lab's) read line by line and its standard error kept apart.
///
/// Invariant: the lab owns the process: it is stopped when the lab shuts down, whatever the test did.
struct WatchProcess: Sendable {
    let lab: NetworkLab
    /// The pid of `netres` itself (`ip netns exec` execs it in place).
    let pid: pid_t
    let outputPath: String
    let errorPath: String

    /// - Parameter errorLog: a file that receives standard error; nil: one in the lab's folder.
    static func start(in network: OnlineLab, arguments: [String], errorLog: String? = nil) async throws -> WatchProcess
    {
        let base = network.lab.directory + "/netres-\(UInt32.random(in: 0...UInt32.max))"
        let errorPath = errorLog ?? base + ".err"
        let pid = try await network.lab.spawn(
            in: network.client, [WatchCommandTests.netres] + arguments, output: base + ".out", errors: errorPath)
        return WatchProcess(lab: network.lab, pid: pid, outputPath: base + ".out", errorPath: errorPath)
    }

    /// Complete output lines so far (a line still being written is left for the next look).
    private var rawLines: [String] {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    /// Every line so far, parsed (an unparsable line becomes `["unparsable": text]`).
    var lines: [[String: Any]] { rawLines.map(Self.parse) }

    private static func parse(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? ["unparsable": line]
    }

    /// How many lines have arrived: take it before a change, then look for lines `since` it.
    var mark: Int { rawLines.count }

    /// The first line at or after `mark` that matches, waiting up to 10 s for it. The transition
    /// and raw-event streams interleave in no fixed order, so every search starts at a mark.
    func line(since mark: Int = 0, _ matches: ([String: Any]) -> Bool) async throws -> [String: Any] {
        var found: [String: Any]?
        _ = await eventually(within: .seconds(10), every: .milliseconds(10)) {
            let lines = rawLines
            found = mark < lines.count ? lines[mark...].map(Self.parse).first(where: matches) : nil
            return found != nil
        }
        guard let found else {
            let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
            throw NetworkLabError(
                .timedOut, "no matching line in 10 s; got \(rawLines); standard error: \(errors.suffix(2000))")
        }
        return found
    }

    /// SIGTERM, then the raw wait status (0: exited 0), or -1 when it is still running after 5 s.
    func terminate() async throws -> Int32 {
        kill(pid, SIGTERM)
        var status: Int32?
        _ = await eventually(within: .seconds(5), every: .milliseconds(10)) {
            status = await lab.exitStatus(of: pid)
            return status != nil
        }
        return status ?? -1
    }
}
