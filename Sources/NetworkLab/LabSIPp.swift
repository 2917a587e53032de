import Foundation
public import Glibc

/// sipp (Debian `sip-tester`) as a scripted SIP far end in a lab host: one XML scenario, its
/// message log (`-trace_msg`) as the witness of every message it sent and received.
///
/// Invariants: the process is the lab's child and goes with it (``NetworkLab/shutdown()``); its
/// life is bounded by the scenario's own timeouts and by `-timeout`; its log is read, never
/// trusted: at most ``LabSIPp/maximumMessages`` messages are parsed.
public struct LabSIPp: Sendable {
    /// Whether sipp is installed.
    public static var isInstalled: Bool { executable != nil }
    static let executable = LabCommand.executable("sipp")
    /// At most this many messages of a log are parsed.
    public static let maximumMessages = 10_000

    public let lab: NetworkLab
    public let host: LabHost
    /// The address sipp's SIP and media sockets are bound to.
    public let address: String
    /// sipp's SIP port (UDP).
    public let port: Int
    /// sipp's RTP port (`-mp`).
    public let mediaPort: Int
    /// The sipp process (an `ip netns exec` that became sipp).
    public let pid: pid_t
    /// The folder of its logs, inside the lab's folder.
    public let directory: String

    /// `sip:USER@address:port`: a Request-URI the registrar relays to this sipp.
    public func uri(user: String = "far") -> String { "sip:\(user)@\(address):\(port)" }

    /// Every message sipp logged so far, in order.
    public func messages() -> [SIPpMessage] {
        SIPpMessage.parse(log: (try? String(contentsOfFile: directory + "/messages.log", encoding: .utf8)) ?? "")
    }

    /// The requests with `method` sipp received so far.
    public func received(_ method: String) -> [SIPpMessage] {
        messages().filter { !$0.sent && $0.method == method }
    }

    /// For a failure message: the start line and CSeq of every message sipp logged (`>` sent,
    /// `<` received), the start of its error log and the end of its standard output.
    public func diagnostics() -> String {
        let flow = messages().suffix(40).map { "\($0.sent ? ">" : "<") \($0.startLine) [\($0.header("CSeq") ?? "")]" }
        let errors = (try? String(contentsOfFile: directory + "/errors.log", encoding: .utf8)) ?? ""
        let output = (try? String(contentsOfFile: directory + "/sipp.out", encoding: .utf8)) ?? ""
        return flow.joined(separator: "\n") + "\nerrors: " + String(errors.prefix(1200)) + "\nout: "
            + String(output.suffix(300))
    }

    /// Waits (at most `bound`, polling) for sipp to exit; its exit code (0: the scenario ran to
    /// its end with every check passing), nil when it is still running.
    public func exitCode(within bound: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + bound
        while true {
            if let status = await lab.exitStatus(of: pid) { return (status >> 8) & 0xff }
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}

extension NetworkLab {
    /// Starts sipp in `host` on `address`:`port` running `scenario` (an XML file) for one call.
    ///
    /// - Parameters:
    ///   - host: the lab host sipp runs in.
    ///   - scenario: the path of the XML scenario.
    ///   - address: the address sipp binds its SIP and media sockets to (one the host has).
    ///   - port: sipp's SIP port (UDP), 1024–65000.
    ///   - mediaPort: sipp's RTP port (`-mp`), 1024–65000.
    ///   - remote: `host:port` to send the first request to (a UAC scenario); nil for a UAS.
    ///   - arguments: more sipp options (e.g. `-s alice`, `-rtp_echo`).
    ///   - timeout: sipp's own `-timeout` (clamped to 1 s … ``NetworkLab/longestFault``): it exits with an
    ///     error when the scenario has not ended by then.
    /// - Throws: ``NetworkLabError`` `.unsupported` when sipp is not installed.
    public func startSIPp(
        in host: LabHost, scenario: String, address: String, port: Int = 5070, mediaPort: Int = 16_000,
        remote: String? = nil, arguments: [String] = [], timeout: Duration = .seconds(60)
    ) async throws -> LabSIPp {
        guard let sipp = LabSIPp.executable else {
            throw error(.unsupported, "sipp is not installed (Debian sip-tester)")
        }
        guard (1024...65_000).contains(port), (1024...65_000).contains(mediaPort) else {
            throw error(.invalidRequest, "sipp ports must be 1024-65000")
        }
        let folder = directory + "/sipp-\(host.name)-\(port)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let seconds = max(1, min(timeout.components.seconds, Self.longestFault.components.seconds))
        var argv = [
            sipp, "-sf", scenario, "-i", address, "-p", "\(port)", "-mi", address, "-mp", "\(mediaPort)", "-m", "1",
            "-timeout", "\(seconds)s", "-timeout_error", "-nostdin", "-trace_msg", "-message_file",
            folder + "/messages.log", "-trace_err", "-error_file", folder + "/errors.log",
        ]
        argv += arguments
        if let remote { argv.append(remote) }
        let pid = try spawn(in: host, argv, output: folder + "/sipp.out")
        // sipp binds its sockets before it reads the scenario's first step; wait until it listens.
        let bound = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < bound, remote == nil {
            let sockets = (try? await run(in: host, ["ss", "-Hlun", "src", "\(address):\(port)"])) ?? ""
            if !sockets.isEmpty { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        record("sipp \(LabText.quoted((scenario as NSString).lastPathComponent)) in \(host)", backend: .sipp)
        return LabSIPp(
            lab: self, host: host, address: address, port: port, mediaPort: mediaPort, pid: pid, directory: folder)
    }
}

/// One SIP message in sipp's message log.
public struct SIPpMessage: Hashable, Sendable {
    /// Whether sipp sent it (else it received it).
    public var sent: Bool
    /// When sipp logged it (its local clock), as seconds since 1970.
    public var at: Double
    /// The start line, e.g. `INVITE sip:far@198.19.255.1:5070 SIP/2.0` or `SIP/2.0 200 OK`.
    public var startLine: String
    /// The whole message text.
    public var text: String

    /// The request's method, nil for a response.
    public var method: String? {
        startLine.hasPrefix("SIP/2.0") ? nil : startLine.split(separator: " ").first.map(String.init)
    }
    /// The response's status, nil for a request.
    public var status: Int? {
        guard startLine.hasPrefix("SIP/2.0 ") else { return nil }
        return startLine.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }

    /// The first header named `name` (case-insensitive, no compact forms), trimmed.
    public func header(_ name: String) -> String? {
        for line in lines.dropFirst().prefix(200) {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { return nil }
            guard let colon = trimmed.firstIndex(of: ":") else { continue }
            if trimmed[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == name.lowercased() {
                return trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// The message's lines without their line ends (sipp logs CRLF; Swift keeps `\r\n` as one
    /// character, so lines are split on any newline).
    public var lines: [Substring] { text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) }

    /// The first line of the body (an SDP line) that starts with `prefix`, e.g. `c=`, trimmed.
    public func bodyLine(_ prefix: String) -> String? {
        let all = lines
        guard let blank = all.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) else { return nil }
        return all[blank...].lazy.map { $0.trimmingCharacters(in: .whitespaces) }.first { $0.hasPrefix(prefix) }
    }

    /// The CSeq number.
    public var cseq: Int? { header("CSeq")?.split(separator: " ").first.flatMap { Int($0) } }

    /// The entries of a `-trace_msg` log: a `-----… DATE TIME` line, `… message sent|received …`,
    /// a blank line, then the message. Malformed entries are skipped.
    static func parse(log: String) -> [SIPpMessage] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        var messages: [SIPpMessage] = []
        for entry in log.components(separatedBy: "----------------------------------------------- ").dropFirst() {
            guard messages.count < LabSIPp.maximumMessages else { break }
            let lines = entry.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false)
            guard lines.count == 4 else { continue }
            let stamp = lines[0].trimmingCharacters(in: .whitespaces)
            let whole = stamp.split(separator: ".").first.map(String.init) ?? stamp
            let fraction = stamp.split(separator: ".").dropFirst().first.flatMap { Double("0." + $0) } ?? 0
            guard let date = formatter.date(from: whole) else { continue }
            let body = String(lines[3])
            let start =
                body.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            messages.append(
                SIPpMessage(
                    sent: lines[1].contains("message sent"), at: date.timeIntervalSince1970 + fraction,
                    startLine: start, text: body))
        }
        return messages
    }
}

extension FaultBackend {
    /// sipp, a scripted SIP far end in a lab host (``LabSIPp``).
    public static let sipp = FaultBackend(rawValue: "sipp")
}
