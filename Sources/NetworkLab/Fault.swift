/// A fault a lab plays against one link; each is bounded in time and undone before
/// ``NetworkLab/inject(_:)`` returns (address changes and renumbering stay: they are the new normal).
public enum Fault: Sendable, CustomStringConvertible {
    /// The host end goes admin-down, then up with its routes back.
    case adminDown(LabLink, for: Duration)
    /// The peer end goes down, so the host end loses carrier while staying admin-up.
    case carrierLoss(LabLink, for: Duration)
    /// The host end moves to a new address in its subnet (seeded), in the given order.
    case addressChange(LabLink, AddressChangeOrder)
    /// Both ends move to a new subnet (seeded); the default route follows.
    case renumber(LabLink)
    /// The host's default routes through the link go away, then come back.
    case defaultRouteLoss(LabLink, for: Duration)
    /// The host's primary moves from one link to the other (a lower-metric route through `to`), then back.
    case interfaceSwitch(from: LabLink, to: LabLink, for: Duration)
    /// The veth pair is deleted and, after the pause, made again with the same names and addresses.
    case linkRecreate(LabLink, after: Duration)
    /// The host end is renamed (down, rename, up), then renamed back.
    case rename(LabLink, to: String, for: Duration)
    /// The host end moves to another host's namespace, then back (addresses and routes restored).
    case moveToHost(LabLink, LabHost, for: Duration)
    /// Carrier flaps on a schedule.
    case flap(LabLink, FlapSchedule)
    /// Drops `percent` of packets in both directions, a seeded pattern of 100 (nftables).
    case packetLoss(LabLink, percent: Int, for: Duration)
    /// Drops every packet in `direction` (nftables).
    case partition(LabLink, PartitionDirection, for: Duration)
    /// The path is dead but looks up: every packet is dropped both ways as it arrives at either
    /// end of the link, while the link, its carrier, addresses and routes stay as they are and its
    /// first hop still answers ARP and neighbour discovery, so netlink shows nothing and a sender
    /// gets no error (nftables, `netdev` ingress in both namespaces). A Wi-Fi whose access point
    /// lost its uplink.
    case deadPath(LabLink, for: Duration)
    /// Limits the host's sending rate (tbf).
    case rateLimit(LabLink, bitsPerSecond: Int, for: Duration)
    /// Delays every frame the host end sends by `delay ± jitter` (seeded, millisecond resolution,
    /// order kept) through the lab's user-space relay: no netem needed.
    case delay(LabLink, delay: Duration, jitter: Duration, for: Duration)
    /// A burst of `changes` address additions and removals in one `ip -batch`, more than a
    /// netlink reader's buffer holds while it is busy.
    case netlinkOverrun(LabLink, changes: Int)
    /// Every mapping of the NAT is forgotten at once, as if each had timed out (`conntrack -F`);
    /// the next packet makes a new one (same public port where the mapping keeps ports).
    case natMappingExpiry(LabNAT)
    /// The NAT forgets its mappings and gives the next one a new public port: the client's
    /// registered public address points nowhere until it registers again.
    case natRebinding(LabNAT)
    /// The gateway forwards nothing for the duration, then comes back with no mappings and new
    /// public ports; neither end of any link goes down (a carrier-grade NAT's reboot).
    case natGatewayReboot(LabNAT, for: Duration)

    /// The link the fault acts on.
    public var link: LabLink {
        switch self {
        case .adminDown(let link, _), .carrierLoss(let link, _), .addressChange(let link, _), .renumber(let link),
            .defaultRouteLoss(let link, _), .interfaceSwitch(let link, _, _), .linkRecreate(let link, _),
            .rename(let link, _, _), .moveToHost(let link, _, _), .flap(let link, _), .packetLoss(let link, _, _),
            .partition(let link, _, _), .deadPath(let link, _), .rateLimit(let link, _, _), .delay(let link, _, _, _),
            .netlinkOverrun(let link, _):
            link
        case .natMappingExpiry(let nat), .natRebinding(let nat), .natGatewayReboot(let nat, _): nat.inside
        }
    }

    public var description: String {
        switch self {
        case .adminDown(let link, let duration): "admin-down \(link) for \(duration)"
        case .carrierLoss(let link, let duration): "carrier-loss \(link) for \(duration)"
        case .addressChange(let link, let order): "address-change \(link) \(order)"
        case .renumber(let link): "renumber \(link)"
        case .defaultRouteLoss(let link, let duration): "default-route-loss \(link) for \(duration)"
        case .interfaceSwitch(let from, let to, let duration): "interface-switch \(from)->\(to) for \(duration)"
        case .linkRecreate(let link, let pause): "link-recreate \(link) after \(pause)"
        case .rename(let link, let name, let duration): "rename \(link)->\(LabText.quoted(name)) for \(duration)"
        case .moveToHost(let link, let host, let duration): "move \(link) to \(host) for \(duration)"
        case .flap(let link, let schedule): "flap \(link) \(schedule)"
        case .packetLoss(let link, let percent, let duration): "packet-loss \(link) \(percent)% for \(duration)"
        case .partition(let link, let direction, let duration): "partition \(link) \(direction) for \(duration)"
        case .deadPath(let link, let duration): "dead-path \(link) for \(duration)"
        case .rateLimit(let link, let rate, let duration): "rate-limit \(link) \(rate)bit/s for \(duration)"
        case .delay(let link, let delay, let jitter, let duration):
            "delay \(link) \(delay)±\(jitter) for \(duration)"
        case .netlinkOverrun(let link, let changes): "netlink-overrun \(link) \(changes) changes"
        case .natMappingExpiry(let nat): "nat-mapping-expiry \(nat.gateway)"
        case .natRebinding(let nat): "nat-rebinding \(nat.gateway)"
        case .natGatewayReboot(let nat, let duration): "nat-gateway-reboot \(nat.gateway) for \(duration)"
        }
    }
}

/// Which address exists first during an address change.
public enum AddressChangeOrder: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The new address is added before the old one goes (no moment without an address).
    case makeBeforeBreak = "make-before-break"
    /// The old address goes before the new one comes (a moment without an address).
    case breakBeforeMake = "break-before-make"
    public var description: String { rawValue }
}

/// Which way a partition drops packets, seen from the link's host.
public enum PartitionDirection: String, Sendable, CaseIterable, CustomStringConvertible {
    case outbound, inbound, both
    public var description: String { rawValue }
}

/// Carrier flaps: `count` cycles of `period`, down for `dutyCycle` of each.
///
/// Invariant (``NetworkLab/inject(_:)`` checks): 1 ≤ count ≤ 100,000, the whole schedule lasts at
/// most ``NetworkLab/longestFault``, and 0 < dutyCycle < 1.
public struct FlapSchedule: Hashable, Sendable, CustomStringConvertible {
    public var count: Int
    public var period: Duration
    public var dutyCycle: Double

    public init(count: Int, period: Duration, dutyCycle: Double = 0.5) {
        self.count = count
        self.period = period
        self.dutyCycle = dutyCycle
    }

    public var description: String { "\(count)x every \(period) down \(Int(dutyCycle * 100))%" }
}
