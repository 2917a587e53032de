extension NetworkPath {
    /// Derives the path from the kernel's facts.
    ///
    /// A candidate is an interface the filter allows (never loopback). It is *usable* when it has
    /// carrier, at least one usable address and a main-table default route of a family for which
    /// it has a usable address. Invariants:
    /// - satisfied ⇔ at least one candidate is usable;
    /// - the primary interface is the usable one with the lowest-metric default route (ties: lowest
    ///   ifindex), and its addresses come first in ``addresses``;
    /// - when unsatisfied, the reason is the first failing check (admin-down, no-carrier,
    ///   no-address, no-default-route) on the candidate that got furthest; `noInterface` when there
    ///   is no candidate at all.
    public static func derive(from snapshot: NetworkSnapshot, filter: InterfaceFilter) -> NetworkPath {
        let candidates = snapshot.links.values.filter(filter.allows).sorted { $0.ifindex < $1.ifindex }
        guard !candidates.isEmpty else { return NetworkPath(status: .unsatisfied(.noInterface)) }

        var usable: [(link: LinkState, addresses: [InterfaceAddress], routes: [DefaultRoute])] = []
        var best: (progress: Int, reason: LossReason)?
        for link in candidates {
            let addresses = snapshot.addresses(of: link.ifindex).filter(\.isUsable)
            let families = Set(addresses.map(\.family))
            let routes = snapshot.defaultRoutes(via: link.ifindex).filter { families.contains($0.family) }
            let failure: (progress: Int, reason: LossReason)? =
                if !link.isAdminUp {
                    (0, .adminDown)
                } else if link.carrier != .carrier {
                    (1, .noCarrier)
                } else if addresses.isEmpty {
                    (2, .noAddress)
                } else if routes.isEmpty {
                    (3, .noDefaultRoute)
                } else {
                    nil
                }
            if let failure {
                if best == nil || failure.progress > best!.progress { best = failure }
            } else {
                usable.append((link, addresses, routes))
            }
        }

        guard !usable.isEmpty else { return NetworkPath(status: .unsatisfied(best?.reason ?? .noInterface)) }
        let routes = usable.flatMap(\.routes).sorted { ($0.metric, $0.ifindex) < ($1.metric, $1.ifindex) }
        let primaryIndex = routes[0].ifindex
        let primary = usable.first { $0.link.ifindex == primaryIndex }!
        let others = usable.filter { $0.link.ifindex != primaryIndex }
        return NetworkPath(
            status: .satisfied,
            primaryInterface: InterfaceRef(ifindex: primary.link.ifindex, name: primary.link.name),
            addresses: primary.addresses + others.flatMap(\.addresses),
            defaultRoutes: routes
        )
    }
}
