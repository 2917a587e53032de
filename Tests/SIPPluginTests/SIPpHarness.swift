import ChildProcesses
import Foundation
import Glibc
import NetworkLab
import SIPPlugin

/// sipp (Debian `sip-tester`) as a real far end on loopback, running one XML scenario kept in
/// `Resources/sipp/` for one call, with its message log as the witness. Stopped by PID.
final class SIPpHarness: Sendable {
    static let executable = ["/usr/bin/sipp", "/usr/local/bin/sipp"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static var isInstalled: Bool { executable != nil }

    let directory: URL
    /// The SIP port sipp listens on (127.0.0.1, UDP).
    let port: Int
    /// sipp's `-mp`: its audio RTP port; its video one is 2 above.
    let mediaPort: Int
    let child: ChildProcess

    static func scenario(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Resources/sipp/\(name).xml").path
    }

    /// Starts `sipp -sf SCENARIO` in server mode on a free port for `calls` calls (sipp tells
    /// calls apart by Call-ID) and returns once it listens (see ``bound(within:)``); the
    /// scenario's own timeouts and `-timeout 40s` bound its life. `arguments` go last (a client
    /// scenario's remote host, `-s USER`).
    ///
    /// Its ports are checked free and released before sipp binds them, so a server another test
    /// starts meanwhile can take one; sipp then exits ("Unable to bind ...") and a client
    /// scenario never sends its request. Such a start is retried on fresh ports (3 starts at
    /// most); a sipp that cannot start throws with its own error.
    ///
    /// sipp answers a call to the address it first heard that Call-ID from: a test whose agent
    /// moves to a new address must reach sipp through the registrar (Kamailio), whose replies
    /// follow the Via.
    ///
    /// `firstPorts` (the SIP and media ports of the first start) is for the harness's own test.
    static func start(
        scenario name: String, calls: Int = 1, arguments: [String] = [], firstPorts: (sip: Int, media: Int)? = nil
    ) async throws -> SIPpHarness {
        var failures: [String] = []
        for attempt in 0..<3 {
            let sipp = try SIPpHarness(
                scenario: name, calls: calls, arguments: arguments, ports: attempt == 0 ? firstPorts : nil)
            // sipp binds its ports only after parsing the scenario: on a loaded machine that
            // takes longer than any fixed pause, and a request sent before it draws ICMP port
            // unreachable. 30 s is a hang guard: the wait ends as soon as sipp listens.
            if await sipp.bound(within: .seconds(30)) { return sipp }
            let said = sipp.errors + sipp.output
            guard sipp.child.hasExitedUnreaped() else {
                sipp.stop()
                throw HarnessError("sipp \(name) did not listen within 30 s: \(said.suffix(600))")
            }
            // Ended on its own (a client scenario can be over in a few milliseconds): its exit
            // status tells the test how.
            guard said.contains("Unable to bind") else { return sipp }
            failures.append(String(said.suffix(600)))
            sipp.stop()
        }
        throw HarnessError("sipp \(name) did not start: \(failures.joined(separator: " | "))")
    }

    private init(scenario name: String, calls: Int, arguments: [String], ports: (sip: Int, media: Int)?) throws {
        guard let executable = Self.executable else { throw HarnessError("sipp is not installed") }
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("nr-sipp-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try ports?.sip ?? LoopbackPort.free()
        // `-mp BASE`: sipp binds its audio RTP socket at BASE and its video one at BASE + 2.
        mediaPort = try ports?.media ?? LoopbackPort.free(udpAbove: [2])
        let messages = directory.appendingPathComponent("messages.log").path
        child = try ChildProcess(
            [
                executable, "-sf", Self.scenario(name), "-i", "127.0.0.1", "-p", "\(port)", "-mp", "\(mediaPort)",
                "-m", "\(calls)", "-timeout", "40s", "-timeout_error", "-trace_msg", "-message_file", messages,
                "-trace_err", "-error_file", directory.appendingPathComponent("errors.log").path,
            ] + arguments, output: directory.appendingPathComponent("stdout.log").path, newProcessGroup: true)
    }

    /// Whether sipp itself holds its SIP port (UDP, or TCP with `-t`) and both media ports within
    /// `bound`: false once it exited without them (a port taken) or when `bound` passed. Polls
    /// `/proc/net/udp` and `/proc/net/tcp` whole (sleeping between looks, so no thread of the
    /// concurrency pool is held) for the sockets whose inode is one of sipp's descriptors: a port
    /// another process holds does not count.
    /// (`String(contentsOfFile:)` read only its first page, 31 sockets: past that, sipp was
    /// never seen and a pool thread blocked for the whole bound.)
    func bound(within bound: Duration) async -> Bool {
        let wanted = Set([port, mediaPort, mediaPort + 2].map { String(format: "0100007F:%04X", $0) })
        let deadline = ContinuousClock.now + bound
        while ContinuousClock.now < deadline && !child.hasExitedUnreaped() {
            let inodes = ChildProcess.socketInodes(of: "\(child.pid)", limit: 256)
            let table = ChildProcess.contents(of: "/proc/net/udp") + ChildProcess.contents(of: "/proc/net/tcp")
            let held = table.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                return fields.count > 9 && inodes.contains(String(fields[9])) ? String(fields[1]) : nil
            }
            if wanted.isSubset(of: held) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// An account of `user` whose registrar (and outbound proxy) is this sipp, the far end of
    /// its calls.
    func account(user: String) -> SIPAccount {
        SIPAccount(
            name: user, registrarHost: "127.0.0.1", registrarPort: port, user: user, domain: "127.0.0.1",
            password: "secret-\(user)")
    }

    var messagesPath: String { directory.appendingPathComponent("messages.log").path }
    /// Every message sipp sent and received, as it logged them.
    var messages: String { (try? String(contentsOfFile: messagesPath, encoding: .utf8)) ?? "" }
    /// What sipp printed (its end-of-run screen, and its start-up error).
    var output: String {
        (try? String(contentsOf: directory.appendingPathComponent("stdout.log"), encoding: .utf8)) ?? ""
    }
    var errors: String {
        (try? String(contentsOf: directory.appendingPathComponent("errors.log"), encoding: .utf8)) ?? ""
    }

    /// Waits (at most `seconds`, polling) for sipp to exit; its exit status, nil when it had to
    /// be killed. 0 means the scenario ran to its end with every check passing. `seconds` is a
    /// hang guard (the suites pass 30): sipp's scenario waits on the agent, which a full run on
    /// two cores can hold back for tens of seconds.
    func exitStatus(within seconds: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(child.pid, &status, WNOHANG) == child.pid { return (status >> 8) & 0xff }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// Kills sipp's process group (if still running) and removes its folder.
    func stop() {
        if !child.hasExitedUnreaped() { kill(-child.pid, SIGKILL) }
        _ = child.hasExited()
        try? FileManager.default.removeItem(at: directory)
    }

    /// How often sipp's log shows a request with `method` it received: each entry is
    /// `... message received [N] bytes :`, a blank line, then the start line.
    func received(_ method: String) -> Int {
        messages.components(separatedBy: "message received").dropFirst().filter { entry in
            let lines = entry.split(separator: "\n").dropFirst()
            let start = lines.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            return start?.trimmingCharacters(in: .whitespaces).hasPrefix("\(method) ") == true
        }.count
    }
}
