/// Per-link facts as the kernel reports them, copied out of netlink at once.
///
/// Everything here can be recomputed from a full dump of links, addresses and routes; nothing is
/// inferred from history. Values are plain Swift so that tests build them as literals.

/// Whether a link can carry packets at layer 2, by systemd-networkd's rule:
/// not admin-up → `off`; admin-up without `IFF_LOWER_UP` → `noCarrier`; `IFF_DORMANT` or
/// operstate DORMANT → `dormant`; otherwise `carrier`.
public enum Carrier: String, Sendable, Hashable, Codable, CaseIterable {
    case off
    case noCarrier = "no-carrier"
    case dormant
    case carrier

    /// Derives the carrier state from interface flags and the RFC 2863 operstate.
    public init(flags: UInt32, operState: OperState) {
        let up: UInt32 = 0x1  // IFF_UP
        let lowerUp: UInt32 = 0x10000  // IFF_LOWER_UP
        let dormantFlag: UInt32 = 0x20000  // IFF_DORMANT
        if flags & up == 0 {
            self = .off
        } else if flags & lowerUp == 0 {
            self = .noCarrier
        } else if flags & dormantFlag != 0 || operState == .dormant {
            self = .dormant
        } else {
            self = .carrier
        }
    }
}

/// The kernel's RFC 2863 operational state (`IFLA_OPERSTATE`), kept raw: its words vary between
/// kernels (DOWN vs LOWERLAYERDOWN for a veth whose peer is down), so decisions use ``Carrier``.
public struct OperState: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let unknown = OperState(rawValue: 0)
    public static let notPresent = OperState(rawValue: 1)
    public static let down = OperState(rawValue: 2)
    public static let lowerLayerDown = OperState(rawValue: 3)
    public static let testing = OperState(rawValue: 4)
    public static let dormant = OperState(rawValue: 5)
    public static let up = OperState(rawValue: 6)

    public var description: String {
        switch rawValue {
        case 0: "unknown"
        case 1: "notpresent"
        case 2: "down"
        case 3: "lowerlayerdown"
        case 4: "testing"
        case 5: "dormant"
        case 6: "up"
        default: "operstate(\(rawValue))"
        }
    }
}

/// One network interface (link-level facts only; addresses and routes are kept beside it).
public struct LinkState: Hashable, Sendable, Codable {
    /// The kernel's interface index. A re-created link gets a new one.
    public var ifindex: Int32
    public var name: String
    /// Raw `ifi_flags` (IFF_UP, IFF_LOWER_UP, IFF_LOOPBACK, ...).
    public var flags: UInt32
    public var operState: OperState
    /// `IFLA_CARRIER_CHANGES`: reveals flaps that collapsed into one event. Nil when not reported.
    public var carrierChanges: UInt32?

    public init(ifindex: Int32, name: String, flags: UInt32, operState: OperState, carrierChanges: UInt32? = nil) {
        self.ifindex = ifindex
        self.name = name
        self.flags = flags
        self.operState = operState
        self.carrierChanges = carrierChanges
    }

    /// `IFF_UP`: the administrator brought the link up.
    public var isAdminUp: Bool { flags & 0x1 != 0 }
    /// `IFF_LOOPBACK`.
    public var isLoopback: Bool { flags & 0x8 != 0 }
    public var carrier: Carrier { Carrier(flags: flags, operState: operState) }
}

public enum AddressFamily: String, Sendable, Hashable, Codable, CaseIterable {
    case ipv4
    case ipv6
}

/// An address assigned to a link (`RTM_NEWADDR`).
public struct InterfaceAddress: Hashable, Sendable, Codable, CustomStringConvertible {
    public var ifindex: Int32
    public var family: AddressFamily
    /// Textual form without prefix, e.g. `198.18.0.2` or `2001:db8::2`.
    public var address: String
    public var prefixLength: UInt8
    /// `ifa_scope`: 0 universe (global), 200 site, 253 link, 254 host.
    public var scope: UInt8
    /// `IFA_F_*` flags (from `IFA_FLAGS` when present).
    public var flags: UInt32

    public init(
        ifindex: Int32, family: AddressFamily, address: String, prefixLength: UInt8, scope: UInt8 = 0, flags: UInt32 = 0
    ) {
        self.ifindex = ifindex
        self.family = family
        self.address = address
        self.prefixLength = prefixLength
        self.scope = scope
        self.flags = flags
    }

    public var isTentative: Bool { flags & 0x40 != 0 }  // IFA_F_TENTATIVE
    public var isDadFailed: Bool { flags & 0x08 != 0 }  // IFA_F_DADFAILED
    /// Usable for a service's path: global or site scope, and for IPv6 neither tentative nor dadfailed.
    public var isUsable: Bool { scope < 253 && !isTentative && !isDadFailed }

    public var description: String { "\(address)/\(prefixLength)" }
}

/// A default route (destination length 0) in the main routing table.
public struct DefaultRoute: Hashable, Sendable, Codable, CustomStringConvertible {
    public var family: AddressFamily
    /// Outgoing interface.
    public var ifindex: Int32
    public var gateway: String?
    /// `RTA_PRIORITY`; lower wins.
    public var metric: UInt32
    public var table: UInt32

    public init(family: AddressFamily, ifindex: Int32, gateway: String? = nil, metric: UInt32 = 0, table: UInt32 = 254)
    {
        self.family = family
        self.ifindex = ifindex
        self.gateway = gateway
        self.metric = metric
        self.table = table
    }

    public var description: String {
        "default\(gateway.map { " via \($0)" } ?? "") dev#\(ifindex) metric \(metric)"
    }
}
