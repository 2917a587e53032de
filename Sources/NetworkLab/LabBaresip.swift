import Foundation
public import Glibc

/// baresip 1.0 (Debian `baresip-core`) as a real phone in a lab host: one account registered at a
/// ``LabRegistrar`` (user U, password `secret-U`), headless in the foreground, with its own config
/// folder, driven through its `ctrl_tcp` module (dial, hang up, hold, list calls) and witnessed by
/// its SIP trace (`-s`: every message it sent and received, in order, in its log).
///
/// The config is the one that keeps a call up: the `ausine` source supports only 48 kHz, so
/// `ausrc_srate 48000` and `ausrc_channels 2` are set (without them baresip closes every call right
/// after the ACK, "ausine: supports only 48kHz"); audio is played into a file, no device is needed.
///
/// Invariants: the process is the lab's child (its own process group) and goes with the lab, on
/// every path (``NetworkLab/shutdown()``, or the garbage collection of a dead owner), or earlier
/// with ``stop()``; its config folder and log are inside the lab's folder; its log is read, never
/// trusted: at most ``LabSIPp/maximumMessages`` messages of its trace are parsed, a control reply is
/// at most 64 KiB and waited for at most 5 s.
public struct LabBaresip: Sendable {
    /// Whether baresip and the modules the phone loads are installed.
    public static var isInstalled: Bool { executable != nil && modules != nil }
    static let executable = LabCommand.executable("baresip")
    static let modules = ["/usr/lib/baresip/modules", "/usr/lib/x86_64-linux-gnu/baresip/modules"].first {
        FileManager.default.fileExists(atPath: "\($0)/ctrl_tcp.so")
    }

    public let lab: NetworkLab
    public let host: LabHost
    /// The account's user, e.g. `bob`: its address of record is `sip:bob@REGISTRAR`.
    public let user: String
    /// The address baresip's SIP socket is bound to; nil: the one baresip picks itself (and
    /// follows, at its 60 s address poll).
    public let address: String?
    /// baresip's SIP port (UDP).
    public let port: Int
    /// The `ctrl_tcp` port on the host's loopback.
    public let controlPort: Int
    /// The baresip process (an `ip netns exec` that became baresip).
    public let pid: pid_t
    /// Its config folder (config, accounts), inside the lab's folder; its log is ``logPath``.
    public let directory: String

    /// baresip's standard output and error: its log lines and its SIP trace.
    public var logPath: String { directory + "/baresip.log" }

    /// Every SIP message baresip sent or received so far, in order (from its SIP trace; the trace
    /// has no time stamps, so ``SIPpMessage/at`` is 0).
    public func messages() -> [SIPpMessage] {
        BaresipTrace.parse(log: log(), own: address.map { "\($0):\(port)" } ?? ":\(port)")
    }

    /// The requests with `method` baresip received so far.
    public func received(_ method: String) -> [SIPpMessage] { messages().filter { !$0.sent && $0.method == method } }

    /// The responses baresip sent with `status` to requests of `method` (by CSeq), so far.
    public func sent(_ status: Int, to method: String) -> [SIPpMessage] {
        messages().filter { $0.sent && $0.status == status && $0.header("CSeq")?.hasSuffix(" \(method)") == true }
    }

    /// For a failure message: the start line and CSeq of the last 40 messages of the trace (`>`
    /// sent, `<` received) and the end of the log's other lines.
    public func diagnostics() -> String {
        let flow = messages().suffix(40).map { "\($0.sent ? ">" : "<") \($0.startLine) [\($0.header("CSeq") ?? "")]" }
        let lines = BaresipTrace.logLines(log()).suffix(15)
        return "baresip \(user): " + flow.joined(separator: "\n") + "\nlog: " + lines.joined(separator: "\n")
    }

    func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Dials `uri` (`ctrl_tcp` `dial`): returns once baresip has taken the command, not when it is answered.
    public func dial(_ uri: String) async throws { try await command("dial", uri) }

    /// Hangs up baresip's current call (`ctrl_tcp` `hangup`).
    public func hangUp() async throws { try await command("hangup") }

    /// How many calls baresip lists now (`ctrl_tcp` `listcalls`, "Active calls (N)").
    public func callCount() async throws -> Int {
        let listing = try await command("listcalls")
        guard let open = listing.range(of: "Active calls ("),
            let number = Int(listing[open.upperBound...].prefix { $0.isNumber })
        else { throw NetworkLabError(.commandFailed, "baresip listcalls: \(LabText.quoted(listing))", seed: lab.seed) }
        return number
    }

    /// Sends one `ctrl_tcp` command (a netstring holding `{"command":…,"params":…}`) and waits at
    /// most 5 s for its response; the response's `data` text. Events baresip sends on the same
    /// connection are skipped.
    @discardableResult
    public func command(_ name: String, _ params: String? = nil) async throws -> String {
        var request: [String: String] = ["command": name, "token": "netlab"]
        request["params"] = params
        let body = try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])
        let fd = try await lab.socket(in: host, domain: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        defer { close(fd) }
        let reply = try await BaresipControl.exchange(
            fd, port: controlPort, netstring: Data("\(body.count):".utf8) + body + Data(",".utf8))
        guard reply["ok"] as? Bool == true else {
            throw NetworkLabError(
                .commandFailed, "baresip \(name): \(LabText.quoted(String(describing: reply)))", seed: lab.seed)
        }
        return reply["data"] as? String ?? ""
    }

    /// Stops baresip (SIGTERM, SIGKILL to its group after 3 s).
    public func stop() async { await lab.stop(pid) }
}

extension NetworkLab {
    /// Starts baresip in `host` as user `user` of `registrar` and waits (≤ 15 s) until it is bound there.
    ///
    /// - Parameters:
    ///   - host: the lab host baresip runs in.
    ///   - user: the account's user (1-20 letters or digits; password `secret-USER`).
    ///   - registrar: the registrar (and proxy) baresip registers at and sends every request to.
    ///   - address: the address baresip's SIP socket is bound to (one the host has); nil: baresip
    ///     picks the host's address itself and moves to a new one at its 60 s address poll (then a
    ///     traced message counts as sent when its source port is `port`: give it a port no peer uses).
    ///   - port: baresip's SIP port (UDP), 1024–65000.
    ///   - controlPort: its `ctrl_tcp` port on the host's loopback, 1024–65000.
    ///   - autoAnswer: answer every incoming call at once (`;answermode=auto`).
    ///   - outboundProxy: send every request through the registrar (`;outbound=`), also a call to a
    ///     URI that names another host; then the registrar's Record-Route keeps the dialog through it,
    ///     and without it the phone sends a dialog's requests wherever the far end's Contact points.
    /// - Throws: ``NetworkLabError`` `.unsupported` when baresip is not installed, `.timedOut` (with
    ///   the end of its log) when it does not register within 15 s.
    public func startBaresip(
        in host: LabHost, user: String, registrar: LabRegistrar, address: String?, port: Int = 5060,
        controlPort: Int = 4444, autoAnswer: Bool = false, outboundProxy: Bool = false
    ) async throws -> LabBaresip {
        guard let baresip = LabBaresip.executable, let modules = LabBaresip.modules else {
            throw error(.unsupported, "baresip is not installed (Debian baresip-core)")
        }
        guard (1...20).contains(user.count), user.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
            (1024...65_000).contains(port), (1024...65_000).contains(controlPort)
        else { throw error(.invalidRequest, "baresip: user 1-20 letters or digits, ports 1024-65000") }
        let folder = directory + "/baresip-\(user)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try BaresipConfig.config(
            directory: folder, modules: modules, listen: "\(address ?? "0.0.0.0"):\(port)", controlPort: controlPort
        ).write(toFile: folder + "/config", atomically: true, encoding: .utf8)
        try BaresipConfig.account(
            user: user, registrar: "\(registrar.address):\(registrar.port)", autoAnswer: autoAnswer,
            outboundProxy: outboundProxy
        ).write(toFile: folder + "/accounts", atomically: true, encoding: .utf8)
        let pid = try spawn(in: host, [baresip, "-s", "-f", folder], output: folder + "/baresip.log")
        let phone = LabBaresip(
            lab: self, host: host, user: user, address: address, port: port, controlPort: controlPort, pid: pid,
            directory: folder)
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline, exitStatus(of: pid) == nil {
            let bound = try await registrar.bindings().contains {
                $0.addressOfRecord.split(separator: "@").first.map(String.init) == user
            }
            let listening = try await run(in: host, ["ss", "-Hltn", "src", "127.0.0.1:\(controlPort)"])
            if bound && !listening.isEmpty {
                record("baresip \(user) in \(host) at \(address ?? "*"):\(port)", backend: .baresip)
                return phone
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        await stop(pid)
        throw error(.timedOut, "baresip \(user) did not register within 15 s: \(phone.diagnostics())")
    }
}

/// The text of a phone's config files.
enum BaresipConfig {
    /// The config of a headless phone that keeps its calls: g711, a 440 Hz sine at 48 kHz stereo
    /// (all `ausine` can do), the far end's audio into a file, the account, menu and ctrl_tcp apps.
    static func config(directory: String, modules: String, listen: String, controlPort: Int) -> String {
        """
        poll_method\t\tepoll
        sip_listen\t\t\(listen)
        sip_trans_bsize\t\t128
        audio_player\t\taufile,\(directory)/heard.wav
        audio_source\t\tausine,440
        audio_alert\t\tnone
        ausrc_srate\t\t48000
        ausrc_channels\t\t2
        module_path\t\t\(modules)
        module\t\t\tg711.so
        module\t\t\tausine.so
        module\t\t\taufile.so
        module_app\t\taccount.so
        module_app\t\tmenu.so
        module_app\t\tctrl_tcp.so
        ctrl_tcp_listen\t\t127.0.0.1:\(controlPort)

        """
    }

    /// One account line: user U at `registrar` (`host:port`) over UDP, password `secret-U`,
    /// re-registering every 600 s, answering at once when `autoAnswer`, sending every request
    /// through the registrar when `outboundProxy` (a loose route: `;lr`).
    static func account(user: String, registrar: String, autoAnswer: Bool, outboundProxy: Bool) -> String {
        "<sip:\(user)@\(registrar);transport=udp>;auth_pass=secret-\(user);regint=600"
            + (autoAnswer ? ";answermode=auto" : "")
            + (outboundProxy ? ";outbound=\"sip:\(registrar);transport=udp;lr\"" : "") + "\n"
    }
}

extension FaultBackend {
    /// baresip, a real phone in a lab host (``LabBaresip``).
    public static let baresip = FaultBackend(rawValue: "baresip")
}
