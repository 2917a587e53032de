import Foundation
import Glibc
import NetworkLab
import Testing

/// One lab for a call fault: a `phone` host running the built `netres run` (account `alice`,
/// UDP, hold-down 0, on link `wifi`), a `server` host running Kamailio (``LabRegistrar``: it
/// registers alice, challenges and record-routes her INVITEs and relays them) and sipp as the far
/// end on the registrar's service address, so replies and in-dialog requests follow the proxy
/// whatever address the phone has.
///
/// Invariant: the lab owns every process here (netres, Kamailio, sipp): `withNetworkLab` removes
/// them with the namespaces, even when a check fails.
struct CallFaultLab {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static let user = "alice"
    /// The sipp scenarios of this suite (read through #filePath, not bundled).
    static let scenarios = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/sipp").path

    let lab: NetworkLab
    let phone: LabHost
    let server: LabHost
    let wifi: LabLink
    let registrar: LabRegistrar
    let client: pid_t
    var socket: String { lab.directory + "/netres.sock" }
    var logPath: String { lab.directory + "/netres.log" }

    /// Builds the lab (Kamailio started with `options`), starts `netres run` (with the default
    /// policy, its `call-survival-budget` replaced when given; alice over `transport`, with
    /// `incomingCalls` as her `incoming-calls:`, `account` more keys of hers, `settings` more
    /// top-level config lines, `policy` more policy lines) and waits until alice is bound once at
    /// the phone's address. With `registrarName`, the phone resolves that name to the registrar's
    /// IPv4 and IPv6 addresses and alice's account names it (a dual-stack registrar); `families`
    /// are the ones `wifi` has when netres starts.
    init(
        _ lab: NetworkLab, callSurvivalBudget: String? = nil, options: RegistrarOptions = .init(),
        transport: String = "udp", incomingCalls: String = "ring", registrarName: String? = nil,
        families: LinkFamilies = .dualStack, account: String = "", settings: String = "", policy: String = ""
    ) async throws {
        self.lab = lab
        phone = try await lab.addHost("phone")
        server = try await lab.addHost("server")
        wifi = try await lab.connect(phone, to: server, as: "wifi")
        registrar = try await lab.startRegistrar(in: server, options: options)
        if let registrarName {
            try await lab.setHostNames(in: phone, [registrarName: [LabAddress.service4, LabAddress.service6]])
        }
        if families != .dualStack { try await lab.setFamilies(wifi, families) }
        var config = """
            control-socket: \(lab.directory)/netres.sock
            interfaces: [wifi]
            hold-down: 0
            accounts: [{name: \(Self.user), registrar: \(registrarName ?? registrar.address), domain: \(registrar.address),
                        transport: \(transport), user: \(Self.user), password: secret-\(Self.user),
                        incoming-calls: \(incomingCalls)\(account)}]
            \(settings)

            """
        if let callSurvivalBudget {
            let policy = try await lab.run(in: phone, [Self.netres, "policy", "default"])
            let budgeted = policy.replacingOccurrences(
                of: "call-survival-budget: 30s", with: "call-survival-budget: \(callSurvivalBudget)")
            try #require(budgeted != policy, "the default policy has no `call-survival-budget: 30s` line")
            try budgeted.write(toFile: lab.directory + "/policy.yaml", atomically: true, encoding: .utf8)
            config += "policy: \(lab.directory)/policy.yaml\n"
        } else if !policy.isEmpty {
            try ("version: 1\n" + policy).write(
                toFile: lab.directory + "/policy.yaml", atomically: true, encoding: .utf8)
            config += "policy: \(lab.directory)/policy.yaml\n"
        }
        try config.write(toFile: lab.directory + "/netres.yaml", atomically: true, encoding: .utf8)
        client = try await lab.spawn(
            in: phone, [Self.netres, "run", "--config", lab.directory + "/netres.yaml"],
            output: lab.directory
                + "/netres.log")
        let ready = try await eventually(within: .seconds(30)) { try await boundOnceAtCurrentAddress() }
        let bindings = try await registrar.bindings()
        try #require(ready, "alice not bound: \(bindings); netres: \(log())")
    }

    /// alice has exactly one binding, at the phone's current address (its IPv6 one on an
    /// IPv6-only link).
    func boundOnceAtCurrentAddress() async throws -> Bool {
        let address = await lab.addresses(of: wifi)
        let contacts = try await registrar.bindings().map(\.contact).filter { $0.contains("\(Self.user)@") }
        return contacts.count == 1
            && (contacts[0].contains("@\(address.ipv4):") || contacts[0].contains("@[\(address.ipv6)]:"))
    }

    /// The end of netres's log (its last `limit` characters), for a failure message.
    func log(limit: Int = 2000) -> String {
        String(((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").suffix(limit))
    }

    /// sipp answering calls (UAS `scenario`) beside the registrar, on port 5070.
    func farEnd(_ scenario: String, calls: Int = 1) async throws -> LabSIPp {
        try await lab.startSIPp(
            in: server, scenario: "\(Self.scenarios)/\(scenario).xml", address: registrar.address, port: 5070,
            mediaPort: 16_000, arguments: ["-m", "\(calls)"])
    }

    /// sipp calling alice (UAC `scenario`) through the registrar, from port 5080.
    func caller(_ scenario: String) async throws -> LabSIPp {
        try await lab.startSIPp(
            in: server, scenario: "\(Self.scenarios)/\(scenario).xml", address: registrar.address, port: 5080,
            mediaPort: 16_100, remote: "\(registrar.address):\(registrar.port)", arguments: ["-s", Self.user])
    }

    /// `netres ctl --socket … WORDS` in the phone host; its reply.
    @discardableResult
    func ctl(_ words: String..., within bound: Duration = .seconds(10)) async throws -> String {
        try await lab.run(in: phone, [Self.netres, "ctl", "--socket", socket] + words, timeout: bound)
    }

    /// The calls `netres ctl calls --json` reports now (`{"calls":[{"id":…,"state":…},…]}`).
    func calls() async throws -> [[String: Any]] {
        let text = try await ctl("calls", "--json")
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        return try #require(object?["calls"] as? [[String: Any]], "ctl calls --json: \(text)")
    }

    /// Places a call from alice to `far` with `netres ctl call` and waits until sipp has the
    /// ACK of its 200 OK; the call's id as `ctl calls` reports it.
    func placeCall(to far: LabSIPp) async throws -> String {
        let reply = try await ctl("call", Self.user, far.uri())
        let acked = await eventually(within: .seconds(15)) { !far.received("ACK").isEmpty }
        try #require(acked, "no call up: ctl said \(reply); sipp: \(far.diagnostics()); netres: \(log())")
        // `ok call ID`
        let words = reply.split(whereSeparator: \.isWhitespace)
        try #require(words.count == 3 && words[0] == "ok", "ctl call: \(reply)")
        return String(words[2])
    }

    /// Waits (≤ 15 s) until netres lists an incoming call, then answers it with `netres ctl
    /// answer`: its id (nil, with an issue recorded, when none rang) and ctl's reply. `caller`
    /// describes the caller for the failure message.
    func answerIncomingCall(from caller: @autoclosure () -> String) async -> (id: String?, reply: String) {
        var id: String?
        _ = await eventually(within: .seconds(15)) {
            id = try? await calls().first { $0["direction"] as? String == "incoming" }?["id"] as? String
            return id != nil
        }
        guard let ringing = id else {
            Issue.record("netres lists no incoming call: \(caller()); netres: \(log())")
            return (nil, "")
        }
        return (ringing, (try? await ctl("answer", ringing)) ?? "no reply")
    }

    /// The `state` `ctl calls` reports for call `id` (nil: not listed, i.e. ended).
    func state(of id: String) async throws -> String? {
        try await calls().first { $0["id"] as? String == id }?["state"] as? String
    }

    /// The RTP packets `ctl calls` counts for call `id` (-1: not listed or no answer).
    func packets(of id: String) async -> Int {
        let call = try? await calls().first { $0["id"] as? String == id }
        return call?["rtp_packets_received"] as? Int ?? -1
    }

    /// The local media address `ctl calls` shows for call `id`.
    func mediaAddress(of id: String) async throws -> String? {
        try await calls().first { $0["id"] as? String == id }?["media_address"] as? String
    }

    /// Whether netres still runs.
    func clientIsRunning() async -> Bool { await lab.exitStatus(of: client) == nil }
}

extension SIPpMessage {
    /// The SDP `c=` address of the message's body, if any.
    var connectionAddress: String? {
        bodyLine("c=IN IP")?.split(separator: " ").last.map(String.init)
    }
}
