import ChildProcesses
import Foundation
import Synchronization
import Testing

/// End to end: the built `netres watch --json --raw` runs inside a namespace while the test
/// changes links there; its JSON Lines are parsed and checked.
@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(1)))
struct WatchCommandTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static let keys: Set<String> = [
        "ts", "mono_ns", "seq", "kind", "event", "iface", "ifindex", "from", "to", "reason", "addresses",
        "synthesized", "downtime_ms",
    ]

    @Test func watchPrintsEveryTransitionAsAJSONLine() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.netres), "netres is not built next to the tests")
        let ns = try NetworkNamespace()
        try ns.addOnlineVeth()
        let watch = try WatchProcess(namespace: ns.name, arguments: ["watch", "--json", "--raw", "--hold-down", "0"])
        defer { watch.kill() }

        let initial = try await watch.line { $0["kind"] as? String == "transition" }
        #expect(initial["event"] as? String == "initial")
        #expect(initial["to"] as? String == "satisfied")
        #expect(initial["iface"] as? String == "veth0")
        #expect(initial["addresses"] as? [String] == ["198.18.0.2/24"])

        var mark = watch.mark
        try ns.ip("link set veth1 down")
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
        try ns.ip("link set veth1 up")
        let restored = try await watch.line(since: mark) { $0["event"] as? String == "restored" }
        #expect((restored["downtime_ms"] as? Int).map { $0 >= 0 } == true)

        mark = watch.mark
        try ns.ip("addr add 198.18.0.9/24 dev veth0")
        let added = try await watch.line(since: mark) { $0["event"] as? String == "address-added" }
        #expect(added["addresses"] as? [String] == ["198.18.0.9/24"])
        #expect(added["iface"] as? String == "veth0")
        let changed = try await watch.line(since: mark) { $0["event"] as? String == "changed" }
        #expect(changed["reason"] as? String == "address")

        mark = watch.mark
        try ns.ip("link set veth0 down")
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

/// `ip netns exec NS netres ...` with its standard output collected line by line.
final class WatchProcess: Sendable {
    /// Raw output lines as they arrive.
    private final class Output: Sendable {
        let state = Mutex<[String]>([])
    }

    private let child: ChildProcess
    private let output = Output()

    /// - Parameter errorLog: a file that receives standard error; nil keeps the test's own.
    init(namespace: String, arguments: [String], errorLog: String? = nil) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw NetworkNamespace.CommandFailed(description: "pipe failed") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(fds[1]) }  // the child holds its own copy; EOF reaches the reader once it exits
        do {
            child = try ChildProcess(
                [NetworkNamespace.ipPath ?? "/usr/sbin/ip", "netns", "exec", namespace, WatchCommandTests.netres]
                    + arguments,
                output: nil, errors: errorLog.map { .file($0) } ?? .inherited, truncate: true,
                outputDescriptor: fds[1])
        } catch {
            close(fds[0])
            throw error
        }
        let handle = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        Thread { [output] in
            var pending = Data()
            while case let chunk = handle.availableData, !chunk.isEmpty {
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[pending.index(after: newline)...])
                    output.state.withLock { $0.append(line) }
                }
            }
        }.start()
    }

    /// Every line so far, parsed (an unparsable line becomes `["unparsable": text]`).
    var lines: [[String: Any]] { output.state.withLock { $0 }.map(Self.parse) }

    private static func parse(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? ["unparsable": line]
    }

    /// How many lines have arrived: take it before a change, then look for lines `since` it.
    var mark: Int { output.state.withLock { $0.count } }

    /// The first line at or after `mark` that matches, waiting up to 10 s for it. The transition
    /// and raw-event streams interleave in no fixed order, so every search starts at a mark.
    func line(since mark: Int = 0, _ matches: ([String: Any]) -> Bool) async throws -> [String: Any] {
        for _ in 0..<1000 {
            let lines = output.state.withLock { $0 }
            if mark < lines.count, let found = lines[mark...].map(Self.parse).first(where: matches) { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw NetworkNamespace.CommandFailed(description: "no matching line in 10 s; got \(lines)")
    }

    /// SIGTERM, then the exit status (bounded at 5 s).
    func terminate() async throws -> Int32 {
        Glibc.kill(child.pid, SIGTERM)
        for _ in 0..<500 {
            if let status = child.exitStatusIfExited() { return status & 0x7f == 0 ? (status >> 8) & 0xff : -1 }
            try await Task.sleep(for: .milliseconds(10))
        }
        return -1
    }

    /// The pid of `netres` itself (`ip netns exec` execs it in place).
    var pid: pid_t { child.pid }

    /// SIGKILL (when still running) and reap.
    func kill() {
        if !child.hasExited() {
            Glibc.kill(child.pid, SIGKILL)
            _ = child.waitForExit()
        }
    }
}
