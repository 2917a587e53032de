import Foundation
import NetworkLab

/// `netres run`'s resident memory under hostile load and faults: before, during and after a UDP
/// flood at its accounts' Contacts, and across a soak of link flaps with a short flood each.
///
/// The flood comes from the registrar's host (a Python sender bounded in time and count), one
/// datagram in three each of: an OPTIONS to an account (a server transaction), a response no
/// transaction waits for, and bytes that are not SIP. RSS is read from `/proc/PID/status`; every
/// figure is netres's own, compared with its own value before the load in the same run.
struct MemoryBenchmark {
    var accounts = 12
    var floodSeconds = 30
    var afterSeconds = 60
    /// 0: no soak.
    var soakMinutes = 0
    var faultEverySeconds = 60

    /// The command line's `NAME=NUMBER` options: the field each sets and its range.
    static var options: [String: (WritableKeyPath<MemoryBenchmark, Int>, ClosedRange<Int>)] {
        [
            "accounts": (\.accounts, 1...200), "flood": (\.floodSeconds, 1...600), "after": (\.afterSeconds, 0...600),
            "soak": (\.soakMinutes, 0...240), "fault-every": (\.faultEverySeconds, 10...3600),
        ]
    }

    func run() async throws {
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let netres = bin.appendingPathComponent("netres").path
        try await SIPLab.with { lab, _ in
            let config = lab.directory + "/netres-memory.yaml"
            var text = """
                log-format: json
                control-socket: \(lab.directory)/netres-memory.sock
                interfaces: [\(lab.initial.interface)]
                hold-down: 0
                accounts:

                """
            for index in 0..<accounts {
                text += """
                      - { name: m\(index), registrar: \(lab.registrarAddress), port: \(lab.port), transport: udp, \
                    user: m\(index), domain: \(lab.registrarAddress), password: secret-m\(index), expires: 300 }

                    """
            }
            try text.write(toFile: config, atomically: true, encoding: .utf8)
            let child = try await lab.start(
                in: lab.client, [netres, "run", "--config", config], output: lab.directory + "/netres-memory.log")
            do {
                try await measure(lab, child)
            } catch {
                await lab.stop(child, signal: SIGKILL)
                throw error
            }
            await lab.stop(child, signal: SIGKILL)
        }
    }

    private func measure(_ lab: SIPLab, _ child: pid_t) async throws {
        let contacts = try await boundContacts(lab)
        try await Task.sleep(for: .seconds(10))  // start-up's transactions end
        let before = Self.memory(child)
        let (sent, peak) = try await flood(lab, contacts, seconds: floodSeconds, sampling: child)
        try await Task.sleep(for: .seconds(afterSeconds))
        let after = Self.memory(child)
        print("## Memory after a flood (`netres-bench memory`)\n")
        print("`netres run`, \(accounts) UDP accounts; \(sent) datagrams in \(floodSeconds) s at their Contacts.")
        print("RssAnon is the heap and stacks; RssFile the pages of the binary and libraries that ran.\n")
        print("| when | VmRSS | against before | RssAnon | RssFile |")
        print("|---|---|---|---|---|")
        print("| before | \(before.total) KiB | 1.00× | \(before.anonymous) KiB | \(before.file) KiB |")
        print("| peak during the flood | \(peak) KiB | \(ratio(peak, before.total)) | | |")
        print(
            "| \(afterSeconds) s after | \(after.total) KiB | \(ratio(after.total, before.total)) (\(after.total - before.total) KiB)"
                + " | \(after.anonymous) KiB (\(after.anonymous - before.anonymous)) | \(after.file) KiB (\(after.file - before.file)) |"
        )
        print("")
        guard soakMinutes > 0 else { return }
        print("### Soak: \(soakMinutes) min, a link flap and a 5 s flood every \(faultEverySeconds) s\n")
        print("| minute | VmRSS | against minute 0 | RssAnon | RssFile |")
        print("|---|---|---|---|---|")
        let start = Self.memory(child)
        print("| 0 | \(start.total) KiB | 1.00× | \(start.anonymous) KiB | \(start.file) KiB |")
        var next = ContinuousClock.now
        var faults = 0
        for minute in 1...soakMinutes {
            let end = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < end {
                if ContinuousClock.now >= next {
                    _ = try await lab.flapClientLink(downFor: .seconds(3))
                    _ = try await flood(lab, contacts, seconds: 5, sampling: child)
                    faults += 1
                    next = next + .seconds(faultEverySeconds)
                }
                try await Task.sleep(until: min(end, next), clock: .continuous)
            }
            let now = Self.memory(child)
            print(
                "| \(minute) | \(now.total) KiB | \(ratio(now.total, start.total)) | \(now.anonymous) KiB | \(now.file) KiB |"
            )
        }
        print("\n\(faults) flaps with a flood each.\n")
    }

    /// The Contacts of every account once all are bound (user → host and port).
    private func boundContacts(_ lab: SIPLab) async throws -> [(user: String, host: String, port: Int)] {
        var found: [(user: String, host: String, port: Int)] = []
        _ = await eventually(within: .seconds(60), every: .milliseconds(500)) {
            found = ((try? await lab.registrar.contacts()) ?? []).compactMap(Self.hostPort)
            return found.count >= accounts
        }
        guard found.count >= accounts else { throw BenchError("only \(found.count) of \(accounts) bound in 60 s") }
        return found
    }

    /// `sip:USER@HOST:PORT;...` → (USER, HOST, PORT).
    static func hostPort(_ contact: String) -> (user: String, host: String, port: Int)? {
        let bare = contact.drop { $0 == "<" }.dropFirst(4).prefix { $0 != ";" && $0 != ">" }
        let parts = bare.split(separator: "@", maxSplits: 1)
        guard parts.count == 2, let colon = parts[1].lastIndex(of: ":"),
            let port = Int(parts[1][parts[1].index(after: colon)...])
        else { return nil }
        return (String(parts[0]), String(parts[1][..<colon]), port)
    }

    /// Floods `contacts` from the registrar's host for `seconds` (at most 5 M datagrams), reading
    /// `pid`'s RSS each second; how many were sent and the peak RSS.
    private func flood(
        _ lab: SIPLab, _ contacts: [(user: String, host: String, port: Int)], seconds: Int, sampling pid: pid_t
    ) async throws -> (sent: Int, peak: Int) {
        let targets = contacts.map { "\($0.user),\($0.host),\($0.port)" }.joined(separator: " ")
        let output = lab.directory + "/flood-\(UInt32.random(in: 0...UInt32.max)).txt"
        let sender = try await lab.start(
            in: lab.server, ["/usr/bin/python3", "-c", Self.floodScript, "\(seconds)", "5000000", targets],
            output: output)
        var peak = Self.resident(pid)
        for _ in 0..<(seconds + 30) {
            try await Task.sleep(for: .seconds(1))
            peak = max(peak, Self.resident(pid))
            if kill(sender, 0) != 0 { break }
        }
        _ = try? await lab.waitForExit(sender, within: .seconds(30))
        let sent =
            Int(((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").last ?? "") ?? 0
        return (sent, peak)
    }

    static func resident(_ pid: pid_t) -> Int { memory(pid).total }

    /// VmRSS, RssAnon and RssFile of `pid` in KiB (-1 when unreadable).
    static func memory(_ pid: pid_t) -> (total: Int, anonymous: Int, file: Int) {
        let status = IdleMeter.parseStatus(path: "/proc/\(pid)/status")
        return (status["VmRSS"] ?? -1, status["RssAnon"] ?? -1, status["RssFile"] ?? -1)
    }

    private func ratio(_ value: Int, _ base: Int) -> String {
        String(format: "%.2f×", Double(value) / Double(max(base, 1)))
    }

    /// argv: seconds, maximum datagrams, `user,host,port` targets.
    static let floodScript = """
        import socket, sys, time
        seconds, limit = float(sys.argv[1]), int(sys.argv[2])
        targets = [t.split(',') for t in sys.argv[3].split()]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        deadline, sent = time.time() + seconds, 0
        while time.time() < deadline and sent < limit:
            for user, host, port in targets:
                n = sent
                kind = n % 3
                if kind == 0:
                    m = ('OPTIONS sip:%s@%s:%s SIP/2.0\\r\\nVia: SIP/2.0/UDP 198.18.9.9:5099;rport;branch=z9hG4bKf%d\\r\\n'
                         'From: <sip:flood@198.18.9.9>;tag=f%d\\r\\nTo: <sip:%s@%s>\\r\\nCall-ID: flood-%d\\r\\n'
                         'CSeq: 1 OPTIONS\\r\\nMax-Forwards: 70\\r\\nContent-Length: 0\\r\\n\\r\\n') % (user, host, port, n, n, user, host, n)
                elif kind == 1:
                    m = ('SIP/2.0 200 OK\\r\\nVia: SIP/2.0/UDP %s:%s;branch=z9hG4bKstray%d\\r\\nFrom: <sip:%s@%s>;tag=s%d\\r\\n'
                         'To: <sip:x@198.18.9.9>;tag=t\\r\\nCall-ID: stray-%d\\r\\nCSeq: 1 OPTIONS\\r\\nContent-Length: 0\\r\\n\\r\\n') % (host, port, n, user, host, n, n)
                else:
                    m = 'not sip %d \\x1b[31m\\x00' % n
                try:
                    s.sendto(m.encode(), (host, int(port)))
                except OSError:
                    time.sleep(0.001)
                sent += 1
        print(sent)
        """
}

/// `NAME=NUMBER` words as (name, number), in order; any other word is an error naming `bench`.
func numberOptions(_ words: ArraySlice<String>, of bench: String) throws -> [(String, Int)] {
    try words.map { word in
        let parts = word.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let value = Int(parts[1]) else { throw BenchError("unknown \(bench) option \(word)") }
        return (String(parts[0]), value)
    }
}
