import Foundation
import NetworkLab
import ResilienceCore
import ResilienceDaemon
import ServiceLifecycle
import Testing

/// sipp is started off the cooperative pool (its harness waits, blocking, until sipp is bound),
/// so a loaded machine cannot starve the daemon's own tasks while it waits.
///
/// Calls driven through `netres run`'s control socket, end to end: the daemon in-process (config
/// file → ``Daemon``, a scripted loopback path, as in ``DaemonKamailioTests``), a real Kamailio
/// that challenges, record-routes and relays INVITEs, and sipp as the far end (scenarios in
/// Resources/sipp/). sipp's exit status and message log, Kamailio's request log, the daemon's
/// log lines and a real hook script are the witnesses.
extension DaemonKamailioTests {
    /// One running daemon with one account at the loopback Kamailio and a hook that records
    /// every call event's variables.
    struct CallDaemon {
        let user: String
        let socket: String
        let records: String
        let lines: Lines

        func recorded() -> [String] {
            ((try? String(contentsOfFile: records, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    func send(_ line: String, _ running: CallDaemon) async throws -> String { try await send(line, running.socket) }

    /// `ctl calls --json`'s calls.
    func calls(_ running: CallDaemon) async throws -> [[String: Any]] {
        let reply = try await send("calls --json", running)
        let object = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any]
        return object?["calls"] as? [[String: Any]] ?? []
    }

    /// Kamailio, a registered daemon and sipp (`uas-daemon-call`, streaming 2 s of PCMU silence
    /// after its ACK); the daemon calls sipp through `ctl call`. The body gets the call's id once
    /// the call is active (and, with `withMedia`, once RTP from sipp arrived), plus whether that
    /// happened within the hang guard (10 s).
    func withCallToSIPp(
        withMedia: Bool = false, _ body: (LabRegistrar, CallDaemon, SIPpHarness, String, Bool) async throws -> Void
    ) async throws {
        // 160 bytes per 20 ms packet; the scenario's rtp_stream names this file.
        let audio = "/tmp/netres-test-pcmu-silence.raw"
        try Data(repeating: 0xFF, count: 16_000).write(to: URL(fileURLWithPath: audio))
        defer { try? FileManager.default.removeItem(atPath: audio) }
        let sipp = try await SIPpHarness.start(scenario: "uas-daemon-call")
        defer { sipp.stop() }
        try await withCallDaemon { kamailio, running in
            let reply = try await send("call \(running.user) sip:far@127.0.0.1:\(sipp.port)", running)
            #expect(reply.hasPrefix("ok call "), "\(reply)")
            let id = String(reply.dropFirst("ok call ".count).dropLast())
            let established = try await eventually(within: .seconds(10)) {
                try await calls(running).first.map {
                    $0["state"] as? String == "active"
                        && (!withMedia || ($0["rtp_packets_received"] as? Int ?? 0) > 0)
                } ?? false
            }
            try await body(kamailio, running, sipp, id, established)
        }
    }

    /// Kamailio, a registered daemon, the body, then shutdown and cleanup whatever happens.
    func withCallDaemon(
        incomingCalls: String = "ring", _ body: (LabRegistrar, CallDaemon) async throws -> Void
    ) async throws {
        try await withLoopbackRegistrar { kamailio in
            try await withCallDaemon(kamailio, incomingCalls: incomingCalls, body)
        }
    }

    /// A registered daemon against `kamailio`, the body, then shutdown and cleanup whatever happens.
    private func withCallDaemon(
        _ kamailio: LabRegistrar, incomingCalls: String, _ body: (LabRegistrar, CallDaemon) async throws -> Void
    ) async throws {
        let directory = "/tmp/netres-calls-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/hooks.d", withIntermediateDirectories: true)
        let user = uniqueUser("daemoncall")
        try "secret-\(user)\n".write(toFile: directory + "/pw", atomically: true, encoding: .utf8)
        let records = directory + "/records"
        let hook = directory + "/hooks.d/10-calls"
        try """
        #!/bin/sh
        [ "$NETRES_EVENT" = call ] || exit 0
        echo "$NETRES_CALL_STATE $NETRES_CALL_DIRECTION $NETRES_ACCOUNT $NETRES_CALL_ID $NETRES_PEER" >> \(records)

        """.write(toFile: hook, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook)
        try """
        log-format: json
        control-socket: ctl.sock
        state-directory: state
        hooks: { directory: hooks.d, timeout: 5s }
        \(accountsEntry(user, kamailio))
            password-file: pw
            expires: 300
            incoming-calls: \(incomingCalls)
        """.write(toFile: directory + "/netres.yaml", atomically: true, encoding: .utf8)
        let (daemon, group, task, lines) = try await startDaemon(configPath: directory + "/netres.yaml")
        let running = CallDaemon(user: user, socket: directory + "/ctl.sock", records: records, lines: lines)
        var failure: (any Error)?
        do {
            #expect(try await eventually(within: .seconds(10)) { try await contacts(kamailio).count == 1 })
            try await body(kamailio, running)
        } catch {
            failure = error
        }
        await group.triggerGracefulShutdown()
        _ = try? await task.value
        await daemon.stop()
        for line in await lines.all { #expect(!line.contains("secret-\(user)"), "no password in the log") }
        if let failure { throw failure }
    }

    @Test(.enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"))
    func ctlPlacesAHoldsResumesAndHangsUpACallWithRTPCounted() async throws {
        try await withCallToSIPp(withMedia: true) { kamailio, running, sipp, id, established in
            let listing = try await calls(running)
            #expect(established, "established with RTP from sipp: \(listing); sipp: \(sipp.errors.suffix(600))")
            let call = try #require(try await calls(running).first)
            #expect(call["id"] as? String == id && call["account"] as? String == running.user)
            #expect(call["direction"] as? String == "outgoing")
            #expect(call["peer"] as? String == "sip:far@127.0.0.1:\(sipp.port)")
            #expect((call["media_address"] as? String)?.hasPrefix("127.0.0.1:") == true)

            // A call in the wrong state and an unknown id are refused with a reason.
            #expect(try await send("resume \(id)", running).hasPrefix("error: call \(id) is active"))
            #expect(try await send("answer \(id)", running).hasPrefix("error: call \(id) is active"))
            #expect(try await send("hold 0000", running) == "error: no call \"0000\"\n")
            #expect(try await send("call nobody sip:far@127.0.0.1", running) == "error: no account \"nobody\"\n")
            #expect(try await send("call \(running.user) sip:far@bad_host", running).hasPrefix("error: call URI"))

            #expect(try await send("hold \(id)", running) == "ok hold \(id) held\n")
            #expect(try await send("resume \(id)", running) == "ok resume \(id) active\n")
            #expect(try await send("hangup \(id)", running) == "ok hangup \(id) ended\n")
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            // sipp saw the INVITE, two re-INVITEs (its checks: sendonly, then sendrecv) and the BYE.
            #expect(sipp.received("INVITE") == 3 && sipp.received("BYE") == 1)
            // Kamailio challenged the first INVITE, then relayed it and the in-dialog requests.
            #expect(kamailio.transactionCount(of: "INVITE", from: running.user) >= 2)
            #expect(try await eventually(within: .seconds(10)) { try await calls(running).isEmpty })

            let log = await running.lines.all.filter { $0.contains(#""kind":"call""#) }
            let states = log.compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["event"] as? String
            }
            #expect(states == ["progressing", "active", "held", "active", "ended"], "\(log)")
            #expect(
                await eventually(within: .seconds(10)) { running.recorded().count == 5 }, "\(running.recorded())")
            #expect(
                running.recorded().first == "progressing outgoing \(running.user) \(id) sip:far@127.0.0.1:\(sipp.port)")
        }
    }

    @Test(.enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"))
    func anIncomingCallInBackgroundRingsAtOnceIsReportedAndAnsweredByCtl() async throws {
        try await withCallDaemon { kamailio, running in
            #expect(try await send("state background", running) == "ok state background\n")
            let (user, port) = (running.user, kamailio.port)
            let sipp = try await SIPpHarness.start(
                scenario: "uac-daemon-incoming", arguments: ["-s", user, "127.0.0.1:\(port)"])
            defer { sipp.stop() }
            #expect(
                try await eventually(within: .seconds(10)) {
                    try await calls(running).first?["state"] as? String == "alerting"
                },
                "the call rings: sipp \(sipp.errors.suffix(600))")
            let ringing = try #require(try await calls(running).first)
            let id = try #require(ringing["id"] as? String)
            #expect(ringing["direction"] as? String == "incoming")
            #expect((ringing["peer"] as? String)?.hasPrefix("sip:caller@") == true)
            #expect(ringing["media_address"] is NSNull, "no media before the answer")
            #expect(sipp.messages.contains("SIP/2.0 180 Ringing"), "sipp got the 180 before any answer")
            let logged = await running.lines.all.contains {
                $0.contains(#""kind":"call""#) && $0.contains(#""event":"alerting""#) && $0.contains(id)
            }
            #expect(logged, "the incoming call is one log line")
            #expect(
                await eventually(within: .seconds(10)) {
                    running.recorded().contains { $0.hasPrefix("alerting incoming ") }
                },
                "the hook ran for the incoming call: \(running.recorded())")
            #expect(try await send("hold \(id)", running).hasPrefix("error: call \(id) is alerting"))

            #expect(try await send(#"{"command":"answer","id":"\#(id)"}"#, running) == "ok answer \(id) active\n")
            #expect(
                try await eventually(within: .seconds(10)) {
                    try await calls(running).first?["state"] as? String == "active"
                })
            #expect(try await send("hangup \(id)", running) == "ok hangup \(id) ended\n")
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("BYE") == 1, "sipp took the daemon's BYE (its scenario sends none)")
            #expect(
                await eventually(within: .seconds(10)) {
                    running.recorded().contains { $0.hasPrefix("ended incoming ") }
                })
        }
    }

    @Test(.enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"))
    func anAccountWithIncomingCallsAnswerAnswersAtOnce() async throws {
        try await withCallDaemon(incomingCalls: "answer") { kamailio, running in
            let (user, port) = (running.user, kamailio.port)
            let sipp = try await SIPpHarness.start(
                scenario: "uac-daemon-incoming", arguments: ["-s", user, "127.0.0.1:\(port)"])
            defer { sipp.stop() }
            // Nobody runs `ctl answer`: the account's setting answers (the scenario waits for the 200).
            #expect(
                try await eventually(within: .seconds(10)) {
                    try await calls(running).first?["state"] as? String == "active"
                })
            let call = try #require(try await calls(running).first)
            #expect((call["media_address"] as? String)?.hasPrefix("127.0.0.1:") == true, "echo media bound")
            let id = try #require(call["id"] as? String)
            #expect(try await send("hangup \(id)", running) == "ok hangup \(id) ended\n")
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            let states = running.recorded().map { $0.split(separator: " ").first.map(String.init) ?? "" }
            #expect(await eventually(within: .seconds(10)) { running.recorded().count == 3 }, "\(states)")
            #expect(
                running.recorded().map { $0.split(separator: " ").first.map(String.init) ?? "" }
                    == ["alerting", "active", "ended"])
        }
    }

    /// `ctl interruption begin` holds the call through the policy (`app.interrupted` →
    /// `hold-call`), `end` resumes it (sipp's scenario checks sendonly, then sendrecv). The far
    /// end must echo Record-Route: the test Kamailio drops an ACK without Route (it takes it for
    /// the ACK of its own 407), so a far end that does not would never see the 2xx's ACK.
    @Test(.enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"))
    func anInterruptionThroughCtlHoldsAndResumesTheCall() async throws {
        try await withCallToSIPp { (_, running, sipp, id, established) async throws in
            #expect(established)
            #expect(try await send("interruption begin", running) == "ok interruption begin\n")
            #expect(
                try await eventually(within: .seconds(10)) {
                    try await calls(running).first?["state"] as? String == "held"
                })
            #expect(try await send("status", running).contains("(interrupted)"))
            #expect(try await send("interruption end", running) == "ok interruption end\n")
            #expect(
                try await eventually(within: .seconds(10)) {
                    try await calls(running).first?["state"] as? String == "active"
                })
            #expect(try await send("hangup \(id)", running) == "ok hangup \(id) ended\n")
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("INVITE") == 3)
        }
    }
}
