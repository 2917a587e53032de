import ChildProcesses
import Foundation
import ResilienceDaemon
import Synchronization
import Testing

/// The built `netres` (beside the test bundle).
private let builtNetres = Bundle.main.bundleURL.appendingPathComponent("netres").path

/// The built `netres ctl` call subcommands against a real control socket whose handler parses
/// each line as the daemon does: what the CLI sends is what ``ControlCommand`` reads.
@Suite(
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: builtNetres), "netres is not built: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct CtlCallCommandTests {
    /// Runs `netres ctl ARGUMENTS --socket S` on its own thread (never Foundation's `Process`:
    /// see `ChildProcess.run`); exit code and stdout.
    func ctl(_ arguments: [String], socket: String) async throws -> (Int32, String) {
        let finished = try await ChildProcess.runOffThePool([builtNetres, "ctl"] + arguments + ["--socket", socket])
        return (finished.exitCode, finished.output)
    }

    @Test func everyCallSubcommandSendsALineTheDaemonParses() async throws {
        let directory = "/tmp/netres-ctlcalls-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/ctl.sock"
        // Keeps what the daemon would act on; the CLI's exit status follows the parse.
        let parsed = Mutex<[ControlCommand]>([])
        let server = ControlServer(path: socket) { line in
            do {
                let command = try ControlCommand.parse(line)
                parsed.withLock { $0.append(command) }
                return "ok\n"
            } catch {
                return "error: \(error)\n"
            }
        }
        let running = Task { try await server.run() }
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let cases: [([String], ControlCommand)] = [
            (["call", "alice", "sip:bob@198.18.0.9"], .call(account: "alice", uri: "sip:bob@198.18.0.9")),
            (["answer", "00ab"], .callControl(.answer, id: "00ab")),
            (["hangup", "00ab"], .callControl(.hangup, id: "00ab")),
            (["hold", "00ab"], .callControl(.hold, id: "00ab")),
            (["resume", "00ab"], .callControl(.resume, id: "00ab")),
            (["interruption", "begin"], .interruption(begins: true)),
            (["calls", "--json"], .calls(json: true)),
        ]
        for (arguments, _) in cases {
            let (status, output) = try await ctl(arguments, socket: socket)
            #expect(status == 0 && output == "ok\n", "\(arguments): \(status) \(output)")
        }
        #expect(parsed.withLock { $0 } == cases.map(\.1))
        // An id with a space travels as one JSON string and is refused whole: exit status 1.
        let (status, output) = try await ctl(["hold", "a b"], socket: socket)
        #expect(status == 1 && output.isEmpty)
        let (uriStatus, _) = try await ctl(["call", "alice", "sip:bob@x.test\r\nX: 1"], socket: socket)
        #expect(uriStatus == 1)
        #expect(parsed.withLock { $0.count } == cases.count, "nothing refused was acted on")
        running.cancel()
        _ = try? await running.value
    }
}
