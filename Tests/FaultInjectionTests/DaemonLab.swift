import Foundation
import Glibc
import NetworkLab

/// The SIP fault suites' lab: NetworkLab's ``ClientAndRegistrar`` (host `client`, link `nrc0`,
/// Kamailio in host `registrar`), with the built `netres run` as the client.
///
/// The client routes IPv4 only (`ipv6Route: false`), as these suites were written for: with an
/// IPv6 default route too, a link's return is two route messages, `restored` and then
/// `changed(default-route)`, and the second supersedes the first's actions.
///
/// Invariants: the lab owns every process (clients, Kamailio) and namespace, and removes them when
/// ``with(_:)`` returns or throws (clients first, so they unregister, Kamailio last).
typealias DaemonLab = ClientAndRegistrar

extension DaemonLab {
    /// The built `netres`, run in the client host as `netres run --config FILE`.
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static var isInstalled: Bool { LabRegistrar.isInstalled }

    var directory: String { lab.directory }
    /// Where the registrar listens (and the domain of every account).
    var registrarAddress: String { registrar.address }

    /// Runs `body` with a lab whose registrar is up.
    static func with<R: Sendable>(_ body: (DaemonLab) async throws -> R) async throws -> R {
        try await withNetworkLab { lab in try await body(lab.addClientAndRegistrar(ipv6Route: false)) }
    }

    /// Runs `body` with a lab whose registrar also listens for TLS on 5061, with a server certificate
    /// of that kind from a CA made for this lab (``RegistrarTLS``).
    static func with<R: Sendable>(
        tls: RegistrarTLS.ServerCertificate, _ body: (DaemonLab, RegistrarTLS) async throws -> R
    ) async throws -> R {
        try await withNetworkLab { lab in
            let certificates = try await RegistrarTLS(directory: lab.directory, server: tls)
            let options = RegistrarOptions(tlsConfiguration: certificates.kamailioConfiguration)
            return try await body(lab.addClientAndRegistrar(options: options, ipv6Route: false), certificates)
        }
    }

    /// ``with(_:)`` with the `netres run` of `user` started and bound at the registrar (≤ 10 s).
    static func registered<R: Sendable>(
        _ user: String, transport: String = "udp", account: [String] = [], _ body: (DaemonLab) async throws -> R
    ) async throws -> R {
        try await with { lab in
            let pid = try await lab.startClient(
                user: user, config: try lab.writeDaemonConfig(user: user, transport: transport, account: account))
            var status: Int32?
            let bound = await eventually(within: .seconds(10)) {
                if status == nil { status = await lab.lab.exitStatus(of: pid) }
                return status != nil || !lab.lines("REGISTERED", user: user).isEmpty
            }
            guard bound, status == nil else {
                let output = (try? String(contentsOfFile: lab.clientOutput(of: user), encoding: .utf8)) ?? ""
                throw NetworkLabError(
                    .timedOut,
                    "\(user) was not registered within 10 s"
                        + (status.map { "; netres exited (wait status \($0)): \(output.suffix(1000))" } ?? ""),
                    seed: lab.lab.seed)
            }
            return try await body(lab)
        }
    }

    /// Starts `netres run --config CONFIG` for `user` in the client host; its PID.
    @discardableResult
    func startClient(user: String, config: String) async throws -> pid_t {
        try await lab.spawn(in: client, [Self.netres, "run", "--config", config], output: clientOutput(of: user))
    }

    /// Runs `netres ctl --socket <user's socket> ARGUMENTS` in the client host; its output (a
    /// non-zero exit throws, with its standard error).
    @discardableResult
    func ctl(_ user: String, _ arguments: [String]) async throws -> String {
        try await lab.run(
            in: client, [Self.netres, "ctl", "--socket", controlSocket(of: user)] + arguments, timeout: .seconds(5))
    }

    /// ``flapClientLink(downFor:)`` for 2 s, the suites' usual flap.
    func flapClientLink() async throws -> (down: Double, up: Double) {
        try await flapClientLink(downFor: .seconds(2))
    }

    /// Moves the client to a new address, make-before-break (``Fault/addressChange(_:_:)``); the new
    /// IPv4 address.
    func moveClient() async throws -> String {
        try await lab.inject(.addressChange(link, .makeBeforeBreak))
        return await lab.addresses(of: link).ipv4
    }

    /// The Contacts bound now (`ul.dump`).
    func boundContacts() async throws -> [String] { try await registrar.contacts() }

    /// The registrar's request log lines of `kind` (a method, `REGISTERED`, `AUTHORIZED`) from `user`.
    func lines(_ kind: String, user: String) -> [RegistrarRequest] {
        registrar.requests().filter { $0.kind == kind && $0.user == user }
    }
}

/// Whether `contact` (a Contact URI) names `user` at exactly `address` (not an address it is a prefix of).
func isContact(_ contact: String, of user: String = "", at address: String) -> Bool {
    [":", ";", ">"].contains { contact.contains("\(user)@\(address)\($0)") }
}
