import ResilienceCore

/// The monitor's Swift copy of the kernel's facts, kept current by decoded messages.
///
/// Invariants: `snapshot` is what a fresh dump would return once every queued message has been
/// applied; applying a message yields exactly the ``NetworkEvent/Kind``s that describe the change
/// (none for a repeat). The kernel flushes IPv4 routes without `RTM_DELROUTE` when a link goes
/// admin-down or loses its last IPv4 address, so flag changes and IPv4 address removals raise ``routesNeedRecheck``; the
/// owner then re-dumps routes and applies ``NetworkSnapshot/routeChanges(to:)``.
struct LinkCache: Sendable {
    private(set) var snapshot: NetworkSnapshot
    /// Set by a message after which the kernel may have removed routes silently.
    var routesNeedRecheck = false

    init(_ snapshot: NetworkSnapshot = .empty) { self.snapshot = snapshot }

    /// Applies one message and returns the changes it made.
    mutating func apply(_ message: RouteMessage) -> [NetworkEvent.Kind] {
        let kinds = changes(for: message)
        for kind in kinds { snapshot.apply(kind) }
        return kinds
    }

    /// Applies changes computed elsewhere (a resync diff).
    mutating func apply(_ kinds: [NetworkEvent.Kind]) {
        for kind in kinds { snapshot.apply(kind) }
    }

    private mutating func changes(for message: RouteMessage) -> [NetworkEvent.Kind] {
        switch message {
        case .newLink(let link):
            guard let old = snapshot.links[link.ifindex] else { return [.linkAdded(link)] }
            if old.flags != link.flags { routesNeedRecheck = true }
            return old == link ? [] : [.linkChanged(from: old, to: link)]
        case .deletedLink(let link):
            guard let old = snapshot.links[link.ifindex] else { return [] }
            // Say what goes with it, so raw subscribers see each fact leave.
            let routes = snapshot.defaultRoutes(via: old.ifindex).map { NetworkEvent.Kind.defaultRouteRemoved($0) }
            let addresses = snapshot.addresses(of: old.ifindex).map { NetworkEvent.Kind.addressRemoved($0) }
            return routes + addresses + [.linkRemoved(old)]
        case .newAddress(let address):
            guard let old = snapshot.address(matching: address.key) else { return [.addressAdded(address)] }
            return old == address ? [] : [.addressChanged(from: old, to: address)]
        case .deletedAddress(let address):
            guard let old = snapshot.address(matching: address.key) else { return [] }
            if address.family == .ipv4 { routesNeedRecheck = true }
            return [.addressRemoved(old)]
        case .newRoute(let routes, let replace):
            var out: [NetworkEvent.Kind] = []
            if replace, let first = routes.first {
                let superseded = snapshot.defaultRoutes.filter {
                    $0.family == first.family && $0.metric == first.metric && !routes.contains($0)
                }
                out += superseded.map { .defaultRouteRemoved($0) }
            }
            out += routes.filter { !snapshot.defaultRoutes.contains($0) }.map { .defaultRouteAdded($0) }
            return out
        case .deletedRoute(let routes):
            return routes.filter { snapshot.defaultRoutes.contains($0) }.map { .defaultRouteRemoved($0) }
        case .done, .error, .ignored:
            return []
        }
    }
}
