/// A debounced change of the ``NetworkPath``, the unit the rules engine reacts to.
///
/// Invariant: a source's transition stream starts with exactly one `.initial`, which is a
/// statement of the current state and never treated as a change. `lost` and `restored` alternate.
public struct PathTransition: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case initial
        case lost(LossReason)
        /// The path came back after `downtime` (from the moment it went unsatisfied).
        case restored(downtime: Duration)
        case changed(PathChange)
    }

    public var kind: Kind
    public var path: NetworkPath
    public var previous: NetworkPath?
    public var at: ContinuousClock.Instant

    public init(kind: Kind, path: NetworkPath, previous: NetworkPath? = nil, at: ContinuousClock.Instant) {
        self.kind = kind
        self.path = path
        self.previous = previous
        self.at = at
    }
}

/// What changed while the path stayed satisfied. Raw values are kebab-case like the rest of the
/// vocabulary: they appear in trigger names (`network.changed.default-route`), watch/JSON output
/// and the hooks' `NETRES_CHANGE`.
public enum PathChange: String, Hashable, Sendable, Codable, CaseIterable {
    /// The set of usable local addresses changed (a service's Contact may be stale).
    case address
    /// The default route changed (gateway or metric) on the same interface.
    case defaultRoute = "default-route"
    /// The primary interface is now another one.
    case interfaceSwitched = "interface-switched"
}

extension PathTransition.Kind: CustomStringConvertible {
    /// `initial`, `lost(no-carrier)`, `restored after 1.5s`, `changed(address)`.
    public var description: String {
        switch self {
        case .initial: "initial"
        case .lost(let reason): "lost(\(reason.rawValue))"
        case .restored(let downtime): "restored after \(DurationText.format(downtime))"
        case .changed(let change): "changed(\(change.rawValue))"
        }
    }
}
