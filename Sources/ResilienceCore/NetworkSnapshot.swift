/// The kernel's view of the network at one instant: every link, address and default route.
///
/// Invariant: it is exactly what a full dump would return, so a cache that has been kept up to
/// date by events must compare equal to a fresh dump.
public struct NetworkSnapshot: Hashable, Sendable, Codable {
    public var links: [Int32: LinkState]
    public var addresses: Set<InterfaceAddress>
    public var defaultRoutes: Set<DefaultRoute>

    public init(
        links: [Int32: LinkState] = [:], addresses: Set<InterfaceAddress> = [], defaultRoutes: Set<DefaultRoute> = []
    ) {
        self.links = links
        self.addresses = addresses
        self.defaultRoutes = defaultRoutes
    }

    public static let empty = NetworkSnapshot()

    /// Addresses of one link, sorted for stable output.
    public func addresses(of ifindex: Int32) -> [InterfaceAddress] {
        addresses.filter { $0.ifindex == ifindex }.sorted {
            ($0.family.rawValue, $0.address) < ($1.family.rawValue, $1.address)
        }
    }

    /// Default routes through one link, lowest metric first.
    public func defaultRoutes(via ifindex: Int32) -> [DefaultRoute] {
        defaultRoutes.filter { $0.ifindex == ifindex }.sorted { $0.metric < $1.metric }
    }

    /// The link with this name, if any.
    public func link(named name: String) -> LinkState? {
        links.values.first { $0.name == name }
    }
}
