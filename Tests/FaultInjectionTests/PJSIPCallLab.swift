import Foundation
import Glibc
import NetworkLab
import Testing

/// PJSIP as the client stack: the repository's pjsua2 adapter (`examples/pjsua2`) runs a real
/// pjsua2 2.15 endpoint (PyPI `pjsua2-python` in `.build/pjsua2-venv`, which `make test`
/// installs) as `alice` in host `phone`, with or without the built `netres run` beside it (no
/// SIP account of its own: the adapter is its external plugin). Host `server` runs Kamailio
/// (``LabRegistrar``, record-routing), host `far` a Debian baresip `bob` that answers at once.
/// Faults act on the phone's `wifi` only.
///
/// Invariant: the lab owns every process here (netres, pjsua2, Kamailio, baresip):
/// `withNetworkLab` removes them with the namespaces, even when a check fails.
struct PJSIPCallLab {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path
    static let python = root + "/.build/pjsua2-venv/bin/python"
    static let phone = root + "/examples/pjsua2/headless_phone.py"
    static let user = "alice"

    /// Whether pjsua2, Kamailio and baresip are here to run the suite.
    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: python) && LabRegistrar.isInstalled
            && LabBaresip.isInstalled
    }

    let lab: NetworkLab
    let phone: LabHost
    let server: LabHost
    let wifi: LabLink
    let registrar: LabRegistrar
    let bob: LabBaresip
    var socket: String { lab.directory + "/netres.sock" }
    var adapterLog: String { lab.directory + "/pjsua2.log" }
    var netresLog: String { lab.directory + "/netres.log" }

    /// Builds the lab and starts netres (when `netres`; with the policy's hold-down unless
    /// `holdDownZero`) and the pjsua2 phone, which registers and calls bob; returns once the call
    /// is up (bob has the ACK of his 200).
    init(_ lab: NetworkLab, netres: Bool, holdDownZero: Bool = true) async throws {
        self.lab = lab
        phone = try await lab.addHost("phone")
        server = try await lab.addHost("server")
        let far = try await lab.addHost("far")
        wifi = try await lab.connect(phone, to: server, as: "wifi")
        registrar = try await lab.startRegistrar(in: server, options: RegistrarOptions(recordRoute: true))
        let lan = try await lab.connect(far, to: server, as: "lan")
        bob = try await lab.startBaresip(
            in: far, user: "bob", registrar: registrar, address: await lab.addresses(of: lan).ipv4, port: 5060,
            controlPort: 4444, autoAnswer: true)
        var phoneCommand = [
            Self.python, Self.phone, "--registrar", registrar.address, "--user", Self.user, "--password",
            "secret-\(Self.user)", "--call", "sip:bob@\(registrar.address)",
        ]
        if netres {
            try """
            control-socket: \(socket)
            interfaces: [wifi]
            \(holdDownZero ? "hold-down: 0" : "")
            accounts: []

            """.write(toFile: lab.directory + "/netres.yaml", atomically: true, encoding: .utf8)
            try await lab.spawn(
                in: phone, [CallFaultLab.netres, "run", "--config", lab.directory + "/netres.yaml"], output: netresLog)
            let listening = await eventually(within: .seconds(15)) { FileManager.default.fileExists(atPath: socket) }
            try #require(listening, "netres run did not open its socket: \(tail(netresLog))")
            phoneCommand += ["--socket", socket]
        }
        try await lab.spawn(
            in: phone, phoneCommand, output: adapterLog, environment: ["PYTHONDONTWRITEBYTECODE": "1"])
        let address = await lab.addresses(of: wifi).ipv4
        let bound = try await eventually(within: .seconds(30)) { try await boundAt(address) }
        try #require(bound, "alice not bound at \(address): \(tail(adapterLog))")
        let acked = await eventually(within: .seconds(30)) { !bob.received("ACK").isEmpty }
        try #require(acked, "no call up: \(tail(adapterLog)); bob: \(bob.diagnostics())")
    }

    /// alice has exactly one binding, and it is at `address`.
    func boundAt(_ address: String) async throws -> Bool {
        let contacts = try await registrar.contacts().filter { $0.contains("\(Self.user)@") }
        return contacts.count >= 1 && contacts.contains { isContact($0, of: Self.user, at: address) }
    }

    /// The re-INVITE bob answered 200 after his first `since` messages, when its Contact and
    /// `c=` carry `address`.
    func reinvite(to address: String, since: Int) -> SIPpMessage? {
        guard let request = PhoneCallLab.answeredReinvite(bob, since: since),
            request.header("Contact")?.contains("@\(address):") == true, request.connectionAddress == address
        else { return nil }
        return request
    }

    /// The adapter's JSON lines (`{"event":…}`) of `event`.
    func reports(_ event: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: adapterLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["event"] as? String == event }
    }

    func tail(_ path: String, limit: Int = 2000) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").suffix(limit))
    }
}
