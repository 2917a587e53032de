import Foundation

/// How a lab NAT picks the public port of a new mapping (RFC 4787 §4.1 words), as Linux's
/// nftables `masquerade` can do it.
public enum NATMapping: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The client's own source port is kept as the public port (Linux's port preservation), so
    /// every destination sees the same public address and port.
    case endpointIndependent = "endpoint-independent"
    /// Every new 5-tuple gets a random public port (`masquerade … random`): a symmetric NAT.
    case addressAndPortDependent = "address-and-port-dependent"
    public var description: String { rawValue }
}

/// How a lab NAT behaves: its mapping, and how long an idle mapping lives.
///
/// Invariant: the timeouts are whole seconds, clamped to 1...3600 (UDP) and 1...432,000 (TCP,
/// Linux's established default) when written to the gateway's conntrack sysctls, which are
/// per network namespace.
public struct NATOptions: Hashable, Sendable {
    public var mapping: NATMapping
    /// How long a UDP mapping lives without traffic (both of Linux's UDP timeouts: unreplied and stream).
    public var udpTimeout: Duration
    /// How long an established TCP mapping lives without traffic.
    public var tcpTimeout: Duration

    /// Defaults are a home router's: endpoint-independent, 30 s UDP, 2 h TCP.
    public init(
        mapping: NATMapping = .endpointIndependent, udpTimeout: Duration = .seconds(30),
        tcpTimeout: Duration = .seconds(7200)
    ) {
        self.mapping = mapping
        self.udpTimeout = udpTimeout
        self.tcpTimeout = tcpTimeout
    }

    /// The sysctl assignments for the gateway's namespace.
    var sysctls: [String] {
        let udp = min(max(udpTimeout.components.seconds, 1), 3600)
        let tcp = min(max(tcpTimeout.components.seconds, 1), 432_000)
        return [
            "net.netfilter.nf_conntrack_udp_timeout=\(udp)", "net.netfilter.nf_conntrack_udp_timeout_stream=\(udp)",
            "net.netfilter.nf_conntrack_tcp_timeout_established=\(tcp)",
        ]
    }
}

/// A gateway host doing source NAT (nftables masquerade) between a client's link (`inside`, the
/// client's default route) and the link to the registrar's host (`outside`, the gateway's).
///
/// Invariant: a value made once by ``NetworkLab/addClientBehindNAT(link:options:nat:)``; the NAT
/// table lives in the gateway's namespace and goes with it. The registrar's host has no route to
/// the inside subnet: what reaches the client from there comes through a mapping or not at all.
public struct LabNAT: Sendable, Hashable {
    public let gateway: LabHost
    /// The client's link to the gateway.
    public let inside: LabLink
    /// The gateway's link to the registrar's host; its host end's IPv4 address is the public address.
    public let outside: LabLink
    public let options: NATOptions
}

extension FaultBackend {
    /// conntrack-tools (`conntrack -F`) and an nftables NAT table in the gateway's namespace.
    public static let conntrack = FaultBackend(rawValue: "conntrack")
}

extension NetworkLab {
    /// Adds hosts `client`, `gateway` and `registrar`: the client's link `name` goes to the
    /// gateway (its default route), the gateway's link `wan0` to the registrar's host, where
    /// Kamailio starts with `options`; the gateway masquerades what leaves through `wan0` as
    /// `nat` says. IPv4 only (the NAT is IPv4's).
    public func addClientBehindNAT(
        link name: String = "nrc0", options: RegistrarOptions = .init(), nat: NATOptions = .init()
    ) async throws -> ClientAndRegistrar {
        guard LabCommand.nft != nil, LabCommand.conntrack != nil else {
            throw error(.unsupported, "a NAT needs nftables (`nft`) and conntrack-tools (`conntrack`)")
        }
        let client = try await addHost("client")
        let gateway = try await addHost("gateway")
        let server = try await addHost("registrar")
        let inside = try await connect(client, to: gateway, as: name)
        let outside = try await connect(gateway, to: server, as: "wan0")
        try await ip(in: client, ["route del ::/0 dev \(name)"])
        let lab = LabNAT(gateway: gateway, inside: inside, outside: outside, options: nat)
        try await installNAT(lab)
        try await run(in: gateway, ["sysctl", "-qw"] + nat.sysctls)
        let registrar = try await startRegistrar(in: server, options: options)
        var result = ClientAndRegistrar(
            lab: self, client: client, server: server, link: inside, registrar: registrar,
            initial: addresses(of: inside), routesIPv6: false)
        result.nat = lab
        return result
    }

    /// The public address: the gateway's end of the outside link.
    public func publicAddress(of nat: LabNAT) -> String { addresses(of: nat.outside).ipv4 }

    /// (Re)writes the gateway's NAT table for the NAT's current generation: generation 0 keeps
    /// ports as the mapping says; each later one (a rebinding, a reboot) draws public ports from
    /// its own range 20000 + 1000·(g mod 40), so the next mapping cannot have the old port.
    func installNAT(_ nat: LabNAT) async throws {
        let generation = natGenerations[nat.gateway.name, default: 0]
        let low = 20_000 + 1000 * (generation % 40)
        let random = nat.options.mapping == .addressAndPortDependent ? " random" : ""
        let outside = LabText.quoted(addresses(of: nat.outside).interface)
        // A port range needs a transport match; what is neither TCP nor UDP is masqueraded plainly.
        let ports =
            generation == 0
            ? "oifname \(outside) masquerade\(random)"
            : "oifname \(outside) meta l4proto { tcp, udp } masquerade to :\(low)-\(low + 999)\(random)"
        let script = """
            table ip netlab_nat
            delete table ip netlab_nat
            table ip netlab_nat {
              chain postrouting {
                type nat hook postrouting priority srcnat; policy accept;
                \(ports)
                oifname \(outside) masquerade
              }
            }

            """
        try await nft(in: nat.gateway, script)
        record("nat \(nat.options.mapping) generation \(generation) in \(nat.gateway)", backend: .conntrack)
    }

    /// Runs an nftables script in `host`.
    func nft(in host: LabHost, _ script: String) async throws {
        guard let nft = LabCommand.nft, let ip = LabCommand.ip else { throw error(.unsupported, "needs `nft`") }
        try await LabCommand.run([ip, "netns", "exec", host.namespace, nft, "-f", "-"], input: script, seed: seed)
    }

    /// Forgets every mapping of the gateway (`conntrack -F` in its namespace).
    func flushMappings(_ nat: LabNAT) async throws {
        guard let conntrack = LabCommand.conntrack, let ip = LabCommand.ip else {
            throw error(.unsupported, "needs conntrack-tools (`conntrack`)")
        }
        try await LabCommand.run([ip, "netns", "exec", nat.gateway.namespace, conntrack, "-F"], seed: seed)
    }

    /// The gateway's UDP mappings now (`conntrack -L -p udp`), one line each; at most 10,000.
    public func udpMappings(of nat: LabNAT) async throws -> [String] { try await mappings(of: nat, "udp") }

    /// The gateway's TCP mappings now (`conntrack -L -p tcp`), one line each; at most 10,000.
    public func tcpMappings(of nat: LabNAT) async throws -> [String] { try await mappings(of: nat, "tcp") }

    private func mappings(of nat: LabNAT, _ transport: String) async throws -> [String] {
        guard let conntrack = LabCommand.conntrack, let ip = LabCommand.ip else {
            throw error(.unsupported, "needs conntrack-tools (`conntrack`)")
        }
        let listing = try await LabCommand.run(
            [ip, "netns", "exec", nat.gateway.namespace, conntrack, "-L", "-p", transport], seed: seed)
        return listing.split(separator: "\n").prefix(10_000).map(String.init).filter { $0.hasPrefix(transport) }
    }

    /// The ports of one `conntrack -L` line: the client's source port (original direction) and
    /// the public port the NAT gave it (the reply direction's destination port); nil when the
    /// line has not both.
    public static func mappedPorts(of line: String) -> (inside: Int, outside: Int)? {
        let words = line.split(separator: " ")
        let sources = words.filter { $0.hasPrefix("sport=") }.compactMap { Int($0.dropFirst(6)) }
        let destinations = words.filter { $0.hasPrefix("dport=") }.compactMap { Int($0.dropFirst(6)) }
        guard sources.count == 2, destinations.count == 2 else { return nil }
        return (sources[0], destinations[1])
    }

    /// Plays a NAT fault (``Fault/natMappingExpiry(_:)``, ``Fault/natRebinding(_:)``,
    /// ``Fault/natGatewayReboot(_:for:)``).
    func playNAT(_ fault: Fault) async throws {
        switch fault {
        case .natMappingExpiry(let nat): try await flushMappings(nat)
        case .natRebinding(let nat):
            natGenerations[nat.gateway.name, default: 0] += 1
            try await installNAT(nat)
            try await flushMappings(nat)
        case .natGatewayReboot(let nat, let downtime):
            // Nothing is forwarded while it is down; it comes back with no mappings and new ports.
            try await nft(
                in: nat.gateway,
                """
                table inet netlab_reboot {
                  chain forward {
                    type filter hook forward priority -10; policy drop;
                  }
                }

                """)
            try await flushMappings(nat)
            do { try await pause(downtime) } catch {
                try? await nft(in: nat.gateway, "delete table inet netlab_reboot\n")
                throw error
            }
            natGenerations[nat.gateway.name, default: 0] += 1
            try await installNAT(nat)
            try await flushMappings(nat)
            try await nft(in: nat.gateway, "delete table inet netlab_reboot\n")
        default: break
        }
    }
}
