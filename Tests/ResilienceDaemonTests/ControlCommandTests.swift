import ChildProcesses
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
        ("call alice sip:bob@198.18.0.9:5070", .call(account: "alice", uri: "sip:bob@198.18.0.9:5070")),
        ("call alice sips:[2001:db8::1]", .call(account: "alice", uri: "sips:[2001:db8::1]")),
        (
            #"{"command":"call","account":"alice","uri":"sip:bob@example.test"}"#,
            .call(account: "alice", uri: "sip:bob@example.test")
        ),
        ("answer 00ab12", .callControl(.answer, id: "00ab12")),
        ("hangup 00ab12", .callControl(.hangup, id: "00ab12")),
        ("hold 00ab12", .callControl(.hold, id: "00ab12")),
        (#"{"command":"resume","id":"00ab12"}"#, .callControl(.resume, id: "00ab12")),
        ("interruption begin", .interruption(begins: true)),
        (#"{"command":"interruption","phase":"end"}"#, .interruption(begins: false)),
        ("calls", .calls(json: false)),
        ("calls --json", .calls(json: true)),
        (#"{"command":"calls","json":true}"#, .calls(json: true)),
    ])
    func textAndJSONLinesParse(line: String, command: ControlCommand) throws {
        #expect(try ControlCommand.parse(line) == command)
    }

    @Test(arguments: [
        "", "state", "state asleep", "status --yaml", "push-token alice", "push-token alice tok;en=1",
        "reboot", "{", #"{"command":"launch"}"#, #"{"state":"background"}"#,
        "call alice", "call alice bob@example.test", "call alice http://example.test", "call alice sip:bob@",
        "call alice sip:bob@exa_mple.test", "call alice sip:bob@example.test:0", "call alice sip:bob@[2001:db8::1",
        "call alice sip:b%4@example.test", #"{"command":"call","account":"alice","uri":"sip:bob@a.test\r\nX: y"}"#,
        "answer", "hold a/b", "hangup \(String(repeating: "a", count: 65))", #"{"command":"resume","id":"x y"}"#,
        "interruption", "interruption start", "calls --yaml",
    ])
    func badLinesAreRejectedWithAReason(line: String) {
        #expect(throws: DaemonError.self) { try ControlCommand.parse(line) }
    }

    @Test func aBadCallURIIsRefusedWithItsReasonAndEscaped() {
        #expect(CallURI.problem("sip:bob@example.test") == nil)
        #expect(CallURI.problem("SIP:alice.smith@198.18.0.1:5060") == nil)
        #expect(CallURI.problem("sip:198.18.0.1") == nil)
        let reason = CallURI.problem("sip:bob@a.test\r\nX: y") ?? ""
        #expect(reason.contains("host"))
        #expect(!reason.contains("\r") && !reason.contains("\n"), "the reason is escaped: \(reason)")
        #expect(CallURI.problem("tel:+15550100")?.contains("does not start with sip:") == true)
        #expect(CallURI.problem("sip:" + String(repeating: "a", count: 300))?.contains("longer than") == true)
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
                let attempt = await OffThePool.run {
                    try? ControlClient.send("status", socket: path, timeoutSeconds: 5)
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
