import Foundation
import Logging
import ResilienceCore
import ResilienceDaemon
import ResiliencePolicyFile
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

/// `netres ctl push` end to end inside one daemon (no registrar: the app stays suspended and the
/// account has no push token, so the push's REGISTER goes to a closed loopback port): the push is
/// logged escaped, counted, handed to the hooks and decided as `push.received.KIND`.
@Suite(.timeLimit(.minutes(3)))
struct DaemonPushTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
        func append(_ line: String) { all.withLock { $0.append(line) } }
        var joined: String { all.withLock { $0.joined(separator: "\n") } }
    }

    @Test func aPushIsLoggedEscapedCountedHandedToHooksAndDecided() async throws {
        let directory = "/tmp/netres-daemon-push-\(UInt32.random(in: 0...UInt32.max))"
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hook = directory + "/hooks.d/10-record"
        try
            "#!/bin/sh\nprintf '%s %s %s %s\\n' \"$NETRES_EVENT\" \"$NETRES_ACCOUNT\" \"$NETRES_PUSH_KIND\" \"$NETRES_PUSH_PAYLOAD\" >> \(records)\n"
            .write(toFile: hook, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook)
        let config = try DaemonConfigFile.parse(
            """
            control-socket: ctl.sock
            app-state: suspended
            hooks: { directory: hooks.d, timeout: 5s }
            metrics: { port: 0 }
            accounts:
              - { name: alice, registrar: 127.0.0.1, port: 9, user: alice, domain: example.test, password: x }
            """, file: directory + "/netres.yaml", directory: directory)
        let lines = Lines()
        var logger = Logger(label: "daemon-push-test")
        logger.logLevel = .critical
        let daemon = try Daemon(
            config: config, source: ScriptedNetworkSource(), output: { lines.append($0) }, logger: logger)
        let decisions = EventRecorder.recording(daemon.manager.events())
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }

        let reply = await daemon.handle(
            line: #"{"command":"push","account":"alice","kind":"message","payload":"m-1 \"hi\" \\ from bob"}"#)
        #expect(reply == "ok push alice message\n")
        #expect(await daemon.handle(line: "push mallory") == "error: no account \"mallory\"\n")
        #expect(await daemon.handle(line: "push alice --kind sms").hasPrefix("error: push: unknown kind"))

        try await decisions.wait { $0.contains { $0.decision?.trigger.name == "push.received.message" } }
        #expect(lines.joined.contains(#"push message alice payload="m-1 \"hi\" \\ from bob""#))
        let metrics = String(decoding: daemon.metrics!.exposition(), as: UTF8.self)
        #expect(metrics.contains(#"netres_pushes{kind="message"} 1"#))
        #expect(metrics.contains(#"netres_pushes{kind="call"} 0"#))
        func recorded() -> String { (try? String(contentsOfFile: records, encoding: .utf8)) ?? "" }
        for _ in 0..<500 where !recorded().contains("push") { try await Task.sleep(for: .milliseconds(10)) }
        // The hooks also ran for the first transition (NETRES_EVENT=initial); the push has its line.
        #expect(recorded().split(separator: "\n").contains(#"push alice message m-1 "hi" \\ from bob"#))

        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
    }

    /// A local caller pushing in a loop gets a bounded log: the push lines, and the decision
    /// and action lines each push causes, share the process's log budget (10 per kind a minute),
    /// while every push is still decided.
    @Test func pushesInALoopWriteABoundedNumberOfLines() async throws {
        let directory = "/tmp/netres-daemon-push-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try DaemonConfigFile.parse(
            """
            control-socket: ctl.sock
            app-state: suspended
            accounts:
              - { name: alice, registrar: 127.0.0.1, port: 9, user: alice, domain: example.test, password: x }
            """, file: directory + "/netres.yaml", directory: directory)
        let lines = Lines()
        var logger = Logger(label: "daemon-push-budget-test")
        logger.logLevel = .critical
        let daemon = try Daemon(
            config: config, source: ScriptedNetworkSource(), output: { lines.append($0) }, logger: logger)
        let decisions = EventRecorder.recording(daemon.manager.events())
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        let running = Task { try await group.run() }
        let pushes = 25
        for _ in 0..<pushes { #expect(await daemon.handle(line: "push alice --kind call") == "ok push alice call\n") }
        try await decisions.wait {
            $0.filter { $0.decision?.trigger.name == "push.received.call" }.count == pushes
        }
        await group.triggerGracefulShutdown()
        try await running.value
        await daemon.stop()
        let all = lines.all.withLock { $0 }
        let pushLines = all.filter { $0.hasSuffix(" push call alice") || $0.contains(" push call alice held-back=") }
        #expect(pushLines.count == LogThrottle().limit, "\(pushLines.count) push lines for \(pushes) pushes")
        let decisionLines = all.filter { $0.contains("decision push.received.call") }
        #expect(decisionLines.count == LogThrottle().limit, "\(decisionLines.count) decision lines")
        // Action lines: at most the budget for each outcome they name.
        let actionLines = all.filter { $0.contains("action push.received.call") }
        let outcomes = Set(actionLines.map { $0.components(separatedBy: "-> ").last?.prefix { $0 != " " } ?? "" })
        #expect(actionLines.count <= LogThrottle().limit * max(outcomes.count, 1), "\(actionLines.count) action lines")
    }
}

struct ControlPushCommandTests {
    @Test func pushLinesParseInTextAndJSON() throws {
        #expect(try ControlCommand.parse("push alice") == .push(try Push(account: "alice", kind: .call)))
        #expect(
            try ControlCommand.parse("push alice --payload p-7 --kind refresh")
                == .push(try Push(account: "alice", kind: .refresh, payload: "p-7")))
        #expect(
            try ControlCommand.parse(#"{"command":"push","account":"alice","kind":"message","payload":"a b"}"#)
                == .push(try Push(account: "alice", kind: .message, payload: "a b")))
        #expect(
            try ControlCommand.parse(#"{"command":"push","account":"alice"}"#) == .push(try Push(account: "alice")))
    }

    @Test(arguments: [
        "push", "push alice --kind", "push alice --kind sms", "push alice --kind call --kind message",
        "push alice --colour red", #"{"command":"push","account":"al ice"}"#,
        #"{"command":"push","account":"alice","payload":"line\nbreak"}"#,
        #"{"command":"push","account":"alice","kind":"message","payload":"\#(String(repeating: "x", count: 1025))"}"#,
    ])
    func malformedPushLinesAreRefusedWithAReason(line: String) {
        #expect(throws: DaemonError.self) { try ControlCommand.parse(line) }
    }
}
