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
    let child: ChildProcess

    static func scenario(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Resources/sipp/\(name).xml").path
    }

    /// Starts `sipp -sf SCENARIO` in server mode on a free port for `calls` calls (sipp tells
    /// calls apart by Call-ID) and returns once it listens (see ``waitUntilBound(port:within:)``);
    /// the scenario's own timeouts and `-timeout 40s` bound its life. `arguments` go last (a
    /// client scenario's remote host, `-s USER`).
    ///
    /// sipp answers a call to the address it first heard that Call-ID from: a test whose agent
    /// moves to a new address must reach sipp through the registrar (Kamailio), whose replies
    /// follow the Via.
    static func start(scenario name: String, calls: Int = 1, arguments: [String] = []) async throws -> SIPpHarness {
        let sipp = try SIPpHarness(scenario: name, calls: calls, arguments: arguments)
        // sipp binds its port only after parsing the scenario: on a loaded machine that takes
        // longer than any fixed pause, and a request sent before it draws ICMP port unreachable.
        await waitUntilBound(port: sipp.port, within: .seconds(5))
        return sipp
    }

    private init(scenario name: String, calls: Int, arguments: [String]) throws {
        guard let executable = Self.executable else { throw HarnessError("sipp is not installed") }
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("nr-sipp-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try LoopbackPort.free()
        let mediaPort = try LoopbackPort.free()
        let messages = directory.appendingPathComponent("messages.log").path
        child = try ChildProcess(
            [
                executable, "-sf", Self.scenario(name), "-i", "127.0.0.1", "-p", "\(port)", "-mp", "\(mediaPort)",
                "-m", "\(calls)", "-timeout", "40s", "-timeout_error", "-trace_msg", "-message_file", messages,
                "-trace_err", "-error_file", directory.appendingPathComponent("errors.log").path,
            ] + arguments, output: directory.appendingPathComponent("stdout.log").path, newProcessGroup: true)
    }

    /// Polls the whole of `/proc/net/udp` (bounded: `bound`; sleeping between looks, so no
    /// thread of the concurrency pool is held) until a socket is bound to 127.0.0.1:`port`.
    /// (`String(contentsOfFile:)` read only its first page, 31 sockets: past that, sipp was
    /// never seen and a pool thread blocked for the whole bound.)
    static func waitUntilBound(port: Int, within bound: Duration) async {
        let local = String(format: "0100007F:%04X", port)
        let deadline = ContinuousClock.now + bound
        while ContinuousClock.now < deadline {
            if ChildProcess.contents(of: "/proc/net/udp").contains(" \(local) ") { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
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
    var errors: String {
        (try? String(contentsOf: directory.appendingPathComponent("errors.log"), encoding: .utf8)) ?? ""
    }

    /// Waits (at most `seconds`, polling) for sipp to exit; its exit status, nil when it had to
    /// be killed. 0 means the scenario ran to its end with every check passing.
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
