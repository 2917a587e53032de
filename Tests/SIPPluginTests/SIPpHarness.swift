import ChildProcesses
import Foundation
import Glibc

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

    /// Starts `sipp -sf SCENARIO` in server mode on a free port for one call; the scenario's own
    /// timeouts and `-timeout 40s` bound its life. `arguments` go last (a client scenario's
    /// remote host, `-s USER`).
    init(scenario name: String, arguments: [String] = []) throws {
        guard let executable = Self.executable else { throw HarnessError("sipp is not installed") }
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("nr-sipp-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try freePort()
        let mediaPort = try freePort()
        let messages = directory.appendingPathComponent("messages.log").path
        child = try ChildProcess(
            [
                executable, "-sf", Self.scenario(name), "-i", "127.0.0.1", "-p", "\(port)", "-mp", "\(mediaPort)",
                "-m", "1", "-timeout", "40s", "-timeout_error", "-trace_msg", "-message_file", messages,
                "-trace_err", "-error_file", directory.appendingPathComponent("errors.log").path,
            ] + arguments, output: directory.appendingPathComponent("stdout.log").path, newProcessGroup: true)
        Thread.sleep(forTimeInterval: 0.3)  // sipp binds its port before reading the scenario's first recv
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
