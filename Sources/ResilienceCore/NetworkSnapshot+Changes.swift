extension InterfaceAddress {
    /// What identifies an address to the kernel: a second `RTM_NEWADDR` with the same key
    /// updates it (flags, scope) rather than adding another.
    public var key: Key { Key(ifindex: ifindex, family: family, address: address, prefixLength: prefixLength) }

    public struct Key: Hashable, Sendable {
        public var ifindex: Int32
        public var family: AddressFamily
        public var address: String
        public var prefixLength: UInt8
    }
}

extension NetworkSnapshot {
    /// The address with this key, if any.
    public func address(matching key: InterfaceAddress.Key) -> InterfaceAddress? {
        addresses.first { $0.key == key }
    }

    /// The snapshot after one event.
    ///
    /// Invariants: applying is idempotent for additions and removals (a stale event replayed
    /// after a re-dump does no harm), and removing a link also removes its addresses and routes,
    /// as the kernel does (it does not always say so for routes).
    public func applying(_ kind: NetworkEvent.Kind) -> NetworkSnapshot {
        var copy = self
        copy.apply(kind)
        return copy
    }

    /// In-place form of ``applying(_:)``.
    public mutating func apply(_ kind: NetworkEvent.Kind) {
        switch kind {
        case .linkAdded(let link), .linkChanged(_, let link):
            links[link.ifindex] = link
        case .linkRemoved(let link):
            links[link.ifindex] = nil
            addresses = addresses.filter { $0.ifindex != link.ifindex }
            defaultRoutes = defaultRoutes.filter { $0.ifindex != link.ifindex }
        case .addressAdded(let address), .addressChanged(_, let address):
            if let old = self.address(matching: address.key) { addresses.remove(old) }
            addresses.insert(address)
        case .addressRemoved(let address):
            if let old = self.address(matching: address.key) { addresses.remove(old) }
        case .defaultRouteAdded(let route):
            defaultRoutes.insert(route)
        case .defaultRouteRemoved(let route):
            defaultRoutes.remove(route)
        case .resynced:
            break
        }
    }

    /// The events that turn `self` into `other`, used to resynchronise after an overrun.
    ///
    /// Invariant: `changes(to: other).reduce(self) { $0.applying($1) } == other`. The order is
    /// removals (routes, addresses, links), then link additions and changes, then address and
    /// route additions, so that no event refers to a link that is not there yet.
    public func changes(to other: NetworkSnapshot) -> [NetworkEvent.Kind] {
        var out: [NetworkEvent.Kind] = []
        out += routeChanges(to: other.defaultRoutes).filter(\.isRemoval)

        let otherKeys = Dictionary(other.addresses.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        for address in sortedAddresses where otherKeys[address.key] == nil {
            out.append(.addressRemoved(address))
        }
        for link in links.values.sorted(by: { $0.ifindex < $1.ifindex }) where other.links[link.ifindex] == nil {
            out.append(.linkRemoved(link))
        }
        for link in other.links.values.sorted(by: { $0.ifindex < $1.ifindex }) {
            if let old = links[link.ifindex] {
                if old != link { out.append(.linkChanged(from: old, to: link)) }
            } else {
                out.append(.linkAdded(link))
            }
        }
        for address in other.sortedAddresses {
            if let old = self.address(matching: address.key) {
                if old != address { out.append(.addressChanged(from: old, to: address)) }
            } else {
                out.append(.addressAdded(address))
            }
        }
        out += routeChanges(to: other.defaultRoutes).filter { !$0.isRemoval }
        return out
    }

    /// Added and removed default routes between the cache and a fresh route dump.
    public func routeChanges(to routes: Set<DefaultRoute>) -> [NetworkEvent.Kind] {
        let order: (DefaultRoute, DefaultRoute) -> Bool = {
            ($0.ifindex, $0.metric, $0.family.rawValue, $0.gateway ?? "")
                < ($1.ifindex, $1.metric, $1.family.rawValue, $1.gateway ?? "")
        }
        return defaultRoutes.subtracting(routes).sorted(by: order).map { .defaultRouteRemoved($0) }
            + routes.subtracting(defaultRoutes).sorted(by: order).map { .defaultRouteAdded($0) }
    }

    private var sortedAddresses: [InterfaceAddress] {
        addresses.sorted { ($0.ifindex, $0.family.rawValue, $0.address) < ($1.ifindex, $1.family.rawValue, $1.address) }
    }
}

extension NetworkEvent.Kind {
    var isRemoval: Bool {
        switch self {
        case .linkRemoved, .addressRemoved, .defaultRouteRemoved: true
        default: false
        }
    }
}
