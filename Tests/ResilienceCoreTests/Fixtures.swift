import ResilienceCore

/// Literal facts for the tests: link `n` is `eth<n>` with ifindex `n`.
enum Fixture {
    static let upFlags: UInt32 = 0x1 | 0x10000  // IFF_UP | IFF_LOWER_UP

    static func link(_ index: Int32, name: String? = nil, up: Bool = true, carrier: Bool = true) -> LinkState {
        var flags: UInt32 = 0
        if up { flags |= 0x1 }
        if carrier { flags |= 0x10000 }
        return LinkState(ifindex: index, name: name ?? "eth\(index)", flags: flags, operState: carrier ? .up : .down)
    }

    static func v4(_ index: Int32, _ address: String = "198.18.0.2") -> InterfaceAddress {
        InterfaceAddress(ifindex: index, family: .ipv4, address: address, prefixLength: 24)
    }

    static func route(_ index: Int32, metric: UInt32 = 0, gateway: String? = "198.18.0.1") -> DefaultRoute {
        DefaultRoute(family: .ipv4, ifindex: index, gateway: gateway, metric: metric)
    }

    /// One fully working interface `eth<index>`.
    static func online(_ index: Int32 = 2, address: String = "198.18.0.2", metric: UInt32 = 0) -> NetworkSnapshot {
        NetworkSnapshot(
            links: [index: link(index)], addresses: [v4(index, address)], defaultRoutes: [route(index, metric: metric)])
    }

    static func merged(_ parts: NetworkSnapshot...) -> NetworkSnapshot {
        var out = NetworkSnapshot()
        for part in parts {
            out.links.merge(part.links) { a, _ in a }
            out.addresses.formUnion(part.addresses)
            out.defaultRoutes.formUnion(part.defaultRoutes)
        }
        return out
    }
}
