import NetworkLab

/// The monitor suites' network on NetworkLab: host `client` with link `veth0` (198.18.1.2/24 and
/// 2001:db8:1::2/64) to host `peer` (its end `veth0p`), and an IPv4 default route only, via
/// 198.18.1.1, so removing "the default route" leaves the path unsatisfied.
///
/// Invariant: the lab removes both hosts (and every link, address and process in them) when
/// ``with(ipv6:_:)`` returns or throws.
struct OnlineLab: Sendable {
    let lab: NetworkLab
    let client: LabHost
    let peer: LabHost
    let link: LabLink

    /// The client's network namespace, where monitors and `netres watch` run.
    var namespace: String { client.namespace }

    /// Runs `body` with the client online; with `ipv6: false` IPv6 is disabled in the client after
    /// the link is made (no link-local addresses, no DAD to wake a reader later).
    static func with<R: Sendable>(ipv6: Bool = true, _ body: (OnlineLab) async throws -> R) async throws -> R {
        try await withNetworkLab { lab in
            let client = try await lab.addHost("client")
            let peer = try await lab.addHost("peer")
            let link = try await lab.connect(client, to: peer, as: "veth0", defaultRoute: false)
            if !ipv6 {
                try await lab.run(
                    in: client,
                    ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
            }
            let gateway = await lab.addresses(of: link).gateway4
            try await lab.ip(in: client, ["route add default via \(gateway) dev veth0"])
            return try await body(OnlineLab(lab: lab, client: client, peer: peer, link: link))
        }
    }

    /// Runs one `ip` command in the client, e.g. `link set veth0 down` (split on spaces).
    func ip(_ command: String) async throws { try await lab.ip(in: client, [command]) }

    /// Runs `ip` commands in the client in one process.
    func batch(_ commands: [String]) async throws { try await lab.ip(in: client, commands) }

    /// Sets the peer's end down or up: `veth0` loses or regains carrier while staying admin-up.
    func setPeer(up: Bool) async throws { try await lab.ip(in: peer, ["link set veth0p \(up ? "up" : "down")"]) }

    /// Runs `ip` commands in the peer in one process (e.g. a carrier flap storm).
    func peerBatch(_ commands: [String]) async throws { try await lab.ip(in: peer, commands) }
}
