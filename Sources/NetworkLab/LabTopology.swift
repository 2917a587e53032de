/// A host of the lab: one network namespace, named `netlab-<owner pid>-<lab>-<name>`.
public struct LabHost: Hashable, Sendable, CustomStringConvertible {
    /// The test's name for it, e.g. `client`.
    public let name: String
    /// The network namespace (`ip netns exec NAMESPACE …`).
    public let namespace: String

    public var description: String { name }
}

/// A veth pair from `host` (the end faults act on) to `peer`, on its own /24 and /64.
///
/// Invariant: the handle never changes; the link's current interface name, addresses and host are
/// the lab's (``NetworkLab/addresses(of:)``), since faults rename, renumber and move it.
public struct LabLink: Hashable, Sendable, CustomStringConvertible {
    /// Position in the lab, 1-based.
    public let id: Int
    /// The interface name in `host` when created, e.g. `wifi`.
    public let name: String
    public let host: LabHost
    public let peer: LabHost
    /// The metric of the host's default route through this link (lower wins).
    public let metric: Int

    public var description: String { name }
}

/// Where a link's host end stands now.
public struct LinkAddresses: Hashable, Sendable {
    /// The interface name in the host (after a rename, the new one).
    public var interface: String
    /// The host end's IPv4 address, e.g. `198.18.1.2`.
    public var ipv4: String
    /// The peer end's IPv4 address: the host's default gateway through this link.
    public var gateway4: String
    /// The host end's IPv6 address, e.g. `2001:db8:1::2`.
    public var ipv6: String
    public var gateway6: String
}

/// The address plan of one link: `198.18.<subnet>.<hostOctet>/24` and `2001:db8:<subnet>::<hostOctet>/64`
/// at the host end, `.1`/`::1` at the peer end.
struct LinkPlan: Sendable {
    var link: LabLink
    var interface: String
    var peerInterface: String
    var subnet: Int
    var hostOctet: Int
    /// The namespace holding the host end now (moves change it).
    var hostNamespace: String

    var addresses: LinkAddresses {
        LinkAddresses(
            interface: interface, ipv4: "198.18.\(subnet).\(hostOctet)", gateway4: "198.18.\(subnet).1",
            ipv6: "2001:db8:\(subnet)::\(hostOctet)", gateway6: "2001:db8:\(subnet)::1")
    }

    /// `ip -batch` lines (for the host namespace) that give the host end its addresses.
    var hostAddressLines: [String] {
        let a = addresses
        return ["address add \(a.ipv4)/24 dev \(interface)", "address add \(a.ipv6)/64 dev \(interface) nodad"]
    }

    /// `ip -batch` lines that (re)install the host's default routes through this link.
    var routeLines: [String] {
        let a = addresses
        return [
            "route replace default via \(a.gateway4) dev \(interface) metric \(link.metric)",
            "route replace ::/0 via \(a.gateway6) dev \(interface) metric \(link.metric)",
        ]
    }

    /// `ip -batch` lines (for the peer namespace) that give the peer end its addresses.
    var peerAddressLines: [String] {
        let a = addresses
        return [
            "address add \(a.gateway4)/24 dev \(peerInterface)",
            "address add \(a.gateway6)/64 dev \(peerInterface) nodad",
        ]
    }
}

/// The registrar's fixed address on its host's loopback, reachable from every link's host end
/// through its default route, so it stays put while client links change.
public enum LabAddress {
    public static let service4 = "198.19.255.1"
    public static let service6 = "2001:db8:ffff::1"
}
