import Foundation
public import Glibc

/// linphonec 5.1 (Debian `linphone-cli`) as a real phone in a lab host: one account registered at
/// a ``LabRegistrar`` (user U, password `secret-U`), headless, with its own home and config,
/// driven through its command line (`call`, `answer`, `terminate`, …) written to a FIFO that is
/// its standard input, and witnessed by the call state lines it prints ("Call 1 with … connected.").
///
/// What makes it run headless (measured with linphonec 5.1.65):
/// - its standard input is the FIFO opened read-write (`0<>`): linphonec exits when its input
///   ends, and a FIFO it holds open for writing itself never ends; a command is one line written
///   to the FIFO;
/// - `HOME/.local/share/linphone` must exist: without it the call database cannot be opened and
///   the core stays in `LinphoneGlobalStartup` (no SIP socket, every INVITE answered 503);
/// - without a sound card the audio streams still run (errors logged, nothing played), but no RTP
///   comes from netres, so `nortp_timeout` is raised from its default 30 s: otherwise linphonec
///   ends the call ("Media connectivity … is lost") with a BYE.
///
/// Invariants: the process is the lab's child (its own process group) and goes with the lab, on
/// every path (``NetworkLab/shutdown()``, or the garbage collection of a dead owner), or earlier
/// with ``stop()``; its home, config, FIFO and log are inside the lab's folder; its log is read,
/// never trusted: at most ``maximumLines`` lines of at most 300 characters are looked at; a command
/// is one line of printable ASCII, at most 200 characters.
public struct LabLinphone: Sendable {
    /// Whether linphonec is installed.
    public static var isInstalled: Bool { executable != nil }
    static let executable = LabCommand.executable("linphonec")
    /// The most log lines ``lines()`` reads.
    public static let maximumLines = 20_000

    public let lab: NetworkLab
    public let host: LabHost
    /// The account's user, e.g. `dave`: its address of record is `sip:dave@REGISTRAR`.
    public let user: String
    /// linphonec's SIP port (UDP, on every address of the host).
    public let port: Int
    /// The linphonec process (an `ip netns exec` that became linphonec).
    public let pid: pid_t
    /// Its home folder (config, call database, FIFO, log), inside the lab's folder.
    public let directory: String

    /// linphonec's standard output and error.
    public var logPath: String { directory + "/linphonec.log" }
    /// The FIFO linphonec reads its commands from.
    var commandPath: String { directory + "/commands" }

    /// The lines linphonec printed so far, prompts and terminal escapes removed, in order.
    public func lines() -> [String] {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return log.split(whereSeparator: \.isNewline).prefix(Self.maximumLines).map { line in
            var text = line.prefix(300)
            while text.hasPrefix("linphonec> ") { text = text.dropFirst("linphonec> ".count) }
            return String(text)
        }
    }

    /// The call state lines printed so far: "Call 1 with sip:… connected.", "Receiving new
    /// incoming call from …", "Media streams established with … for call 1 (audio).", "Call 1
    /// with … ended (No error).", and the like; log lines with a time stamp are left out.
    public func callLines() -> [String] {
        lines().filter {
            $0.hasPrefix("Call ") || $0.hasPrefix("Receiving new incoming call") || $0.hasPrefix("Media streams")
        }
    }

    /// How many times a call's media streams (re)started: once when it is answered, once more
    /// for every re-INVITE or UPDATE linphonec accepted for it.
    public func streamStarts() -> Int { callLines().filter { $0.hasPrefix("Media streams established") }.count }

    /// For a failure message: the end of the log, time-stamped library lines left out.
    public func diagnostics() -> String {
        let shown = lines().filter { !$0.hasPrefix("20") }.suffix(25)
        return "linphonec \(user): " + shown.map { LabText.quoted($0) }.joined(separator: "\n")
    }

    /// Calls `uri` (`call`): returns once the command is written, not when it is answered.
    public func call(_ uri: String) throws { try command("call \(uri)") }

    /// Answers the ringing call (`answer`).
    public func answer() throws { try command("answer") }

    /// Ends the current call (`terminate`): linphonec sends BYE (or CANCEL while it rings).
    public func terminate() throws { try command("terminate") }

    /// Writes one command line to linphonec's FIFO. linphonec holds the FIFO open itself, so the
    /// write never blocks on a missing reader.
    /// - Throws: ``NetworkLabError`` `.invalidRequest` for a line that is not 1-200 characters of
    ///   printable ASCII, `.commandFailed` when the FIFO cannot be written.
    public func command(_ line: String) throws {
        guard (1...200).contains(line.count), line.unicodeScalars.allSatisfy({ (" "..."~").contains($0) }) else {
            throw NetworkLabError(.invalidRequest, "linphonec command: \(LabText.quoted(line))", seed: lab.seed)
        }
        let fd = open(commandPath, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw NetworkLabError(
                .commandFailed, "linphonec \(user): open its FIFO: \(errorText(errno))", seed: lab.seed)
        }
        defer { close(fd) }
        let bytes = Array((line + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            throw NetworkLabError(.commandFailed, "linphonec \(user): write to its FIFO failed", seed: lab.seed)
        }
    }

    /// Stops linphonec (SIGTERM, SIGKILL to its group after 3 s).
    public func stop() async { await lab.stop(pid) }
}

extension NetworkLab {
    /// Starts linphonec in `host` as user `user` of `registrar` and waits (≤ 15 s) until it is bound there.
    ///
    /// - Parameters:
    ///   - host: the lab host linphonec runs in (it needs a default route: linphonec's network
    ///     monitor finds its address by a route to a public address).
    ///   - user: the account's user (1-20 letters or digits; password `secret-USER`).
    ///   - registrar: the registrar (and proxy) linphonec registers at and sends every request to.
    ///   - port: linphonec's SIP port (UDP, on all the host's addresses), 1024–60000; its audio RTP
    ///     port is `port + 2000`.
    ///   - autoAnswer: answer every incoming call at once (`-a`).
    /// - Throws: ``NetworkLabError`` `.unsupported` when linphonec is not installed, `.timedOut`
    ///   (with the end of its log) when it does not register within 15 s.
    public func startLinphone(
        in host: LabHost, user: String, registrar: LabRegistrar, port: Int, autoAnswer: Bool = false
    ) async throws -> LabLinphone {
        guard let linphonec = LabLinphone.executable else {
            throw error(.unsupported, "linphonec is not installed (Debian linphone-cli)")
        }
        guard (1...20).contains(user.count), user.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
            (1024...60_000).contains(port)
        else { throw error(.invalidRequest, "linphonec: user 1-20 letters or digits, port 1024-60000") }
        let folder = directory + "/linphonec-\(user)"
        try FileManager.default.createDirectory(
            atPath: folder + "/.local/share/linphone", withIntermediateDirectories: true)
        try LinphoneConfig.config(user: user, registrar: "\(registrar.address):\(registrar.port)", port: port)
            .write(toFile: folder + "/linphonerc", atomically: true, encoding: .utf8)
        guard mkfifo(folder + "/commands", 0o600) == 0 else {
            throw error(.commandFailed, "linphonec \(user): mkfifo: \(errorText(errno))")
        }
        // sh opens the FIFO read-write as standard input, then becomes linphonec (same pid).
        let argv =
            ["/bin/sh", "-c", "exec \"$@\" 0<>\"$0\"", folder + "/commands", linphonec, "-c", folder + "/linphonerc"]
            + (autoAnswer ? ["-a"] : [])
        let pid = try spawn(in: host, argv, output: folder + "/linphonec.log", environment: ["HOME": folder])
        let phone = LabLinphone(lab: self, host: host, user: user, port: port, pid: pid, directory: folder)
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline, exitStatus(of: pid) == nil {
            let bound = try await registrar.bindings().contains {
                $0.addressOfRecord.split(separator: "@").first.map(String.init) == user
            }
            if bound {
                record("linphonec \(user) in \(host) at *:\(port)", backend: .linphonec)
                return phone
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        await stop(pid)
        throw error(.timedOut, "linphonec \(user) did not register within 15 s: \(phone.diagnostics())")
    }
}

/// The text of linphonec's config file.
enum LinphoneConfig {
    /// UDP only on `port`, audio RTP on `port + 2000`, no video, a 1 h no-RTP timeout (netres
    /// sends no media), and one account: user U at `registrar` (`host:port`), password
    /// `secret-U`, re-registering every 600 s, every request sent to the registrar. linphonec's
    /// own `Supported` tags are left as they are (GRUU on): it then puts the public GRUU the
    /// registrar hands it in the Contact of its dialogs, so the far end's in-dialog requests
    /// reach it through the registrar (`route[GRUU]` of its Kamailio configuration).
    static func config(user: String, registrar: String, port: Int) -> String {
        """
        [sip]
        sip_port=\(port)
        sip_tcp_port=0
        sip_tls_port=0
        default_proxy=0

        [rtp]
        audio_rtp_port=\(port + 2000)
        nortp_timeout=3600

        [video]
        display=0
        capture=0

        [proxy_0]
        reg_proxy=<sip:\(registrar);transport=udp>
        reg_route=<sip:\(registrar);transport=udp;lr>
        reg_identity=sip:\(user)@\(registrar)
        reg_expires=600
        reg_sendregister=1

        [auth_info_0]
        username=\(user)
        passwd=secret-\(user)

        """
    }
}

extension FaultBackend {
    /// linphonec, a real phone in a lab host (``LabLinphone``).
    public static let linphonec = FaultBackend(rawValue: "linphonec")
}
