import Foundation

/// The usual SIP lab: host `client` joined by one link to host `registrar`, where a
/// ``LabRegistrar`` (Kamailio) runs on ``LabAddress/service4``, reached through the client's
/// default route.
///
/// Invariant: a value, made once by ``NetworkLab/addClientAndRegistrar(link:options:ipv6Route:)``;
/// the lab owns both hosts, the link and Kamailio, and removes them with everything else.
public struct ClientAndRegistrar: Sendable {
    public let lab: NetworkLab
    /// The host a client under test runs in.
    public let client: LabHost
    /// The host Kamailio runs in; its end of ``link`` is the link's name + `p`.
    public let server: LabHost
    /// The client's link to the registrar's host, metric 100.
    public let link: LabLink
    public let registrar: LabRegistrar
    /// The client end's interface and addresses when the lab came up (faults may change them since:
    /// ``NetworkLab/addresses(of:)`` says where it stands now).
    public let initial: LinkAddresses
    /// Whether the client has an IPv6 default route besides the IPv4 one.
    public let routesIPv6: Bool
    /// The NAT between the client and the registrar's host, when the lab has one
    /// (``NetworkLab/addClientBehindNAT(link:options:nat:)``).
    public internal(set) var nat: LabNAT? = nil

    /// Takes the client's link admin-down for `downtime`, then brings it up with its default
    /// route(s) back in one `ip -batch` (``bringClientUp()``); CLOCK_REALTIME (``realtime()``) just
    /// before it went down and just before it came up, to compare with ``RegistrarRequest/at``.
    public func flapClientLink(downFor downtime: Duration) async throws -> (down: Double, up: Double) {
        let downAt = realtime()
        try await lab.linkDown(link)
        try await Task.sleep(for: downtime)
        let upAt = realtime()
        try await bringClientUp()
        return (downAt, upAt)
    }

    /// Brings the client's link up with the default route(s) it had, in one `ip -batch`.
    public func bringClientUp() async throws {
        guard !routesIPv6 else { return try await lab.linkUp(link) }
        let now = await lab.addresses(of: link)
        try await lab.ip(
            in: client,
            [
                "link set \(now.interface) up",
                "route replace default via \(now.gateway4) dev \(now.interface) metric \(link.metric)",
            ])
    }
}

extension NetworkLab {
    /// Adds hosts `client` and `registrar`, joins them with a link named `link` (the client's default
    /// route), and starts Kamailio in `registrar` with `options`.
    ///
    /// - Parameters:
    ///   - name: the client's interface name (the registrar's end is `name` + `p`).
    ///   - options: how Kamailio starts (``RegistrarOptions``).
    ///   - ipv6Route: false leaves the client an IPv4 default route only. With both, a link's return
    ///     reaches a monitor as two route messages (IPv4, then IPv6): a path `restored` and then
    ///     `changed(default-route)`, where a single-stack client sees one restore.
    public func addClientAndRegistrar(
        link name: String = "nrc0", options: RegistrarOptions = .init(), ipv6Route: Bool = true
    ) async throws -> ClientAndRegistrar {
        let client = try await addHost("client")
        let server = try await addHost("registrar")
        let link = try await connect(client, to: server, as: name)
        if !ipv6Route { try await ip(in: client, ["route del ::/0 dev \(name)"]) }
        let registrar = try await startRegistrar(in: server, options: options)
        return ClientAndRegistrar(
            lab: self, client: client, server: server, link: link, registrar: registrar,
            initial: addresses(of: link), routesIPv6: ipv6Route)
    }
}
