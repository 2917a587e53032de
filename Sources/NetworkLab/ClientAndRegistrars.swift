import Foundation
import Glibc

/// The failover lab: host `client` joined by one link to host `registrar`, where a primary
/// Kamailio (``LabAddress/service4``), a backup one (``LabAddress/backup4``, sharing the user
/// table: both compute user U's password `secret-U`) and dnsmasq (``LabAddress/dns4``, the
/// client's resolver) run. ``domain`` has NAPTR and SRV records only (no A record): RFC 3263
/// leads from it to `primary.DOMAIN` (priority 10) and then `backup.DOMAIN` (priority 20), for
/// UDP and TCP.
///
/// Invariant: a value made once by ``NetworkLab/addClientAndRegistrars(domain:ttl:options:)``; the lab
/// owns hosts, link, both Kamailios, dnsmasq, nft tables and the client's resolv.conf.
public struct ClientAndRegistrars: Sendable {
    public let lab: NetworkLab
    public let client: LabHost
    public let server: LabHost
    public let link: LabLink
    public let primary: LabRegistrar
    public let backup: LabRegistrar
    public let dns: LabDNS
    /// The SIP domain whose NAPTR/SRV records name both registrars.
    public let domain: String

    /// The NAPTR, SRV and A records of the lab: UDP and TCP to `primary` (priority 10), then
    /// `backup` (20); `order` swaps the priorities (a record change).
    public static func records(domain: String, ttl: Int, primaryFirst: Bool = true) -> LabDNSRecords {
        let (first, second) = primaryFirst ? (10, 20) : (20, 10)
        var srv: [LabDNSRecords.SRV] = []
        var naptr: [LabDNSRecords.NAPTR] = []
        for (index, (service, prefix)) in [("SIP+D2U", "_sip._udp"), ("SIP+D2T", "_sip._tcp")].enumerated() {
            naptr.append(
                .init(
                    name: domain, order: 10, preference: 10 + index, service: service,
                    replacement: "\(prefix).\(domain)"))
            srv.append(
                .init(name: "\(prefix).\(domain)", target: "primary.\(domain)", port: 5060, priority: first, weight: 10)
            )
            srv.append(
                .init(name: "\(prefix).\(domain)", target: "backup.\(domain)", port: 5060, priority: second, weight: 10)
            )
        }
        return LabDNSRecords(
            naptr: naptr, srv: srv,
            hosts: ["primary.\(domain)": [LabAddress.service4], "backup.\(domain)": [LabAddress.backup4]], ttl: ttl)
    }

    /// Makes the primary silent: every packet to its address is dropped in its host (nftables),
    /// until ``unsilencePrimary()``. Kamailio keeps running, so nothing refuses or resets.
    public func silencePrimary() async throws {
        try await lab.nftTable(
            "netlab_failover_\(getpid())", in: server, input: ["ip daddr \(LabAddress.service4) drop"])
    }

    /// Ends ``silencePrimary()``.
    public func unsilencePrimary() async throws {
        try await lab.deleteNftTable("netlab_failover_\(getpid())", in: server)
    }

    /// Kills the primary: SIGKILL to Kamailio's whole process group, nothing sent (a crash).
    public func killPrimary() async { await primary.crash() }
}

extension NetworkLab {
    /// The failover lab (``ClientAndRegistrars``): client, one link, a primary and a backup
    /// Kamailio and dnsmasq in host `registrar`; records with `ttl` seconds (dnsmasq `--local-ttl`).
    public func addClientAndRegistrars(domain: String = "lab.test", ttl: Int = 60, options: RegistrarOptions = .init())
        async throws -> ClientAndRegistrars
    {
        let client = try await addHost("client")
        let server = try await addHost("registrar")
        let link = try await connect(client, to: server, as: "nrc0")
        try await ip(in: client, ["route del ::/0 dev nrc0"])
        let primary = try await startRegistrar(in: server, options: options)
        let backup = try await startBackupRegistrar(in: server, options: options)
        let dns = try await startDNS(
            in: server, domain: domain, records: ClientAndRegistrars.records(domain: domain, ttl: ttl))
        try await dns.serve(client)
        return ClientAndRegistrars(
            lab: self, client: client, server: server, link: link, primary: primary, backup: backup, dns: dns,
            domain: domain)
    }

    /// A second Kamailio in `host` on ``LabAddress/backup4`` (IPv4 only), same users and passwords
    /// as the first: every address in its configuration is its own (listen, presence and
    /// pua_reginfo), its folder `registrar-backup-HOST`.
    public func startBackupRegistrar(in host: LabHost, options: RegistrarOptions = .init()) async throws
        -> LabRegistrar
    {
        try await batch(host.namespace, ["address add \(LabAddress.backup4)/32 dev lo"])
        let registrar = try LabRegistrar(
            placement: .host(self, host), address4: LabAddress.backup4, address6: nil, port: 5060,
            directory: directory + "/registrar-backup-\(host.name)", options: options)
        try await registrar.start()
        return registrar
    }

    /// Installs nft table `name` (inet) with `input` rules in `host`'s namespace.
    func nftTable(_ name: String, in host: LabHost, input: [String]) async throws {
        guard let nft = LabCommand.nft, let ip = LabCommand.ip else {
            throw error(.unsupported, "nftables (`nft`, Debian nftables) is not installed")
        }
        let script = """
            table inet \(name) {
              chain in {
                type filter hook input priority 0; policy accept;
                \(input.joined(separator: "\n    "))
              }
            }

            """
        try await LabCommand.run([ip, "netns", "exec", host.namespace, nft, "-f", "-"], input: script, seed: seed)
        record("nft table \(name) in \(host.namespace)", backend: .nftables)
    }

    /// Deletes nft table `name` from `host`'s namespace.
    func deleteNftTable(_ name: String, in host: LabHost) async throws {
        guard let nft = LabCommand.nft, let ip = LabCommand.ip else { return }
        try await LabCommand.run(
            [ip, "netns", "exec", host.namespace, nft, "delete", "table", "inet", name], seed: seed)
        record("nft table \(name) deleted", backend: .nftables)
    }
}

extension LabRegistrar {
    /// SIGKILL to Kamailio's whole process group (the main PID alone leaves workers answering), reaped; its PID
    /// and control files removed, so ``start()`` brings it back empty.
    public func crash() async {
        guard let running = pid else { return }
        pid = nil
        kill(-running, SIGKILL)
        await placement.stop(running)
        try? FileManager.default.removeItem(atPath: controlSocket)
        try? FileManager.default.removeItem(atPath: directory + "/kamailio.pid")
        await placement.record("registrar killed")
    }
}

extension ClientAndRegistrars {
    /// Writes a `netres run` configuration named `name` into the lab's folder and returns its
    /// path: JSON log, control socket `NAME.sock` beside it, interface `nrc0`, hold-down 0, and
    /// one account per `(user, transport)` registering at ``domain`` with no port (its NAPTR and
    /// SRV records decide), password `secret-USER`, `flow-ping` when given, plus the inline YAML
    /// keys `extra[user]` (e.g. `subscriptions: [{ package: reg }]`); `flow-ping-timeout` when
    /// `flowPingTimeout` is given.
    public func writeDaemonConfig(
        name: String, accounts: [(user: String, transport: String)], flowPing: Int? = nil,
        flowPingTimeout: Int? = nil, extra: [String: String] = [:]
    ) throws -> String {
        let path = lab.directory + "/\(name).yaml"
        var text = """
            log-format: json
            control-socket: \(lab.directory)/\(name).sock
            interfaces: [nrc0]
            hold-down: 0

            """
        if let flowPingTimeout { text += "flow-ping-timeout: \(flowPingTimeout)s\n" }
        text += "accounts:\n"
        for (user, transport) in accounts {
            let keys =
                [
                    "name: \(user)", "registrar: \(domain)", "transport: \(transport)", "user: \(user)",
                    "domain: \(domain)",
                    "password: secret-\(user)",
                ] + (flowPing.map { ["flow-ping: \($0)s"] } ?? []) + (extra[user].map { [$0] } ?? [])
            text += "  - { \(keys.joined(separator: ", ")) }\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
