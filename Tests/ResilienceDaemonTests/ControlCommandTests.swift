import Foundation
import ResilienceCore
import ResilienceDaemon
import Testing

struct ControlCommandTests {
    @Test(arguments: [
        ("state background", ControlCommand.state(.background)),
        ("  state foreground \r\n", .state(.foreground)),
        ("status", .status(json: false)),
        ("status --json", .status(json: true)),
        ("push-token alice abc123:DEF-_.", .pushToken(account: "alice", token: "abc123:DEF-_.")),
        (#"{"command":"state","state":"suspended"}"#, .state(.suspended)),
        (#"{"command":"status","json":true}"#, .status(json: true)),
        (#"{"command":"push-token","account":"alice","token":"f00d"}"#, .pushToken(account: "alice", token: "f00d")),
    ])
    func textAndJSONLinesParse(line: String, command: ControlCommand) throws {
        #expect(try ControlCommand.parse(line) == command)
    }

    @Test(arguments: [
        "", "state", "state asleep", "status --yaml", "push-token alice", "push-token alice tok;en=1",
        "reboot", "{", #"{"command":"launch"}"#, #"{"state":"background"}"#,
    ])
    func badLinesAreRejectedWithAReason(line: String) {
        #expect(throws: DaemonError.self) { try ControlCommand.parse(line) }
    }

    @Test func aTokenIsWrittenAtomicallyWithMode0600() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netres-tok-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("alice.push").path
        #expect(PushTokenStore.read(path) == nil)
        try PushTokenStore.write("first", to: path)
        try PushTokenStore.write("second", to: path)
        #expect(PushTokenStore.read(path) == "second")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["alice.push"])
    }

    @Test func theServerAnswersEachLineAndTheClientReadsTheReply() async throws {
        let directory = URL(fileURLWithPath: "/tmp/netres-ctl-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("control.sock").path
        let server = ControlServer(path: path) { line in "echo \(line)\n" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            var reply = ""
            for _ in 0..<100 {  // bounded: the socket appears within a second
                // The client blocks: keep it off the cooperative pool the other suites share.
                let attempt = await withCheckedContinuation { continuation in
                    Thread.detachNewThread {
                        continuation.resume(
                            returning: try? ControlClient.send("status", socket: path, timeoutSeconds: 5))
                    }
                }
                if let answer = attempt {
                    reply = answer
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(reply == "echo status\n")
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let parent = try FileManager.default.attributesOfItem(atPath: directory.path)
            #expect((parent[.posixPermissions] as? Int) == 0o700)
            group.cancelAll()
        }
    }
}
