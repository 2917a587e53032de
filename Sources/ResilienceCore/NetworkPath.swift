/// Whether services can reach the network, derived from a ``NetworkSnapshot`` and an
/// ``InterfaceFilter``.
///
/// Invariant: `isSatisfied` is true exactly when at least one allowed, non-loopback interface has
/// carrier, a usable address and a default route in the main table.
public struct NetworkPath: Hashable, Sendable, Codable {
    public enum Status: Hashable, Sendable, Codable {
        case satisfied
        case unsatisfied(LossReason)
    }

    public var status: Status
    /// The interface of the lowest-metric usable default route.
    public var primaryInterface: InterfaceRef?
    /// Usable addresses on usable interfaces, primary interface first.
    public var addresses: [InterfaceAddress]
    /// The default routes that make the path usable, lowest metric first.
    public var defaultRoutes: [DefaultRoute]

    public init(
        status: Status, primaryInterface: InterfaceRef? = nil, addresses: [InterfaceAddress] = [],
        defaultRoutes: [DefaultRoute] = []
    ) {
        self.status = status
        self.primaryInterface = primaryInterface
        self.addresses = addresses
        self.defaultRoutes = defaultRoutes
    }

    public var isSatisfied: Bool { status == .satisfied }

    /// `satisfied` or `unsatisfied`, as `netres watch`, `netres status` and hooks print it.
    public var statusWord: String { isSatisfied ? "satisfied" : "unsatisfied" }
}

/// A named interface.
public struct InterfaceRef: Hashable, Sendable, Codable, CustomStringConvertible {
    public var ifindex: Int32
    public var name: String
    public init(ifindex: Int32, name: String) {
        self.ifindex = ifindex
        self.name = name
    }
    public var description: String { name }
}

/// Why the path is not satisfied, from the most to the least fundamental cause seen on the best
/// candidate interface.
public enum LossReason: String, Hashable, Sendable, Codable, CaseIterable {
    /// No allowed interface exists (all removed, or filtered out).
    case noInterface = "no-interface"
    case linkRemoved = "link-removed"
    case adminDown = "admin-down"
    case noCarrier = "no-carrier"
    case noAddress = "no-address"
    case noDefaultRoute = "no-default-route"
}
