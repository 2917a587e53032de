/// One raw change the monitor saw (or synthesized after an overrun by diffing a fresh dump).
public struct NetworkEvent: Hashable, Sendable {
    /// What changed.
    public enum Kind: Hashable, Sendable {
        case linkAdded(LinkState)
        case linkChanged(from: LinkState, to: LinkState)
        /// The link was deleted or moved to another namespace.
        case linkRemoved(LinkState)
        case addressAdded(InterfaceAddress)
        /// An address changed flags (e.g. IPv6 DAD finished: tentative → usable).
        case addressChanged(from: InterfaceAddress, to: InterfaceAddress)
        case addressRemoved(InterfaceAddress)
        case defaultRouteAdded(DefaultRoute)
        case defaultRouteRemoved(DefaultRoute)
        /// The socket overran; the cache was rebuilt from a fresh dump and the events before
        /// this marker (flagged `synthesized`) are the difference.
        case resynced
    }

    /// Monotonic sequence number assigned by the source, starting at 1.
    public var seq: UInt64
    public var kind: Kind
    /// True when the event was derived from a re-dump rather than read from the kernel.
    public var synthesized: Bool
    /// When the source read it (`ContinuousClock`: CLOCK_BOOTTIME on Linux, so it counts suspends).
    public var at: ContinuousClock.Instant

    public init(seq: UInt64, kind: Kind, synthesized: Bool = false, at: ContinuousClock.Instant) {
        self.seq = seq
        self.kind = kind
        self.synthesized = synthesized
        self.at = at
    }

    /// The interface index the event is about, if any.
    public var ifindex: Int32? {
        switch kind {
        case .linkAdded(let l), .linkRemoved(let l), .linkChanged(_, let l): l.ifindex
        case .addressAdded(let a), .addressRemoved(let a), .addressChanged(_, let a): a.ifindex
        case .defaultRouteAdded(let r), .defaultRouteRemoved(let r): r.ifindex
        case .resynced: nil
        }
    }
}
