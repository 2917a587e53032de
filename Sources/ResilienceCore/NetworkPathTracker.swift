/// Turns a sequence of snapshots into debounced ``PathTransition``s. A pure value: time is
/// passed in, nothing is read from a clock, so tests drive it with literal instants.
///
/// Rules (the invariants the tests pin):
/// - The first update yields `.initial`, and only once.
/// - A loss waits `holdDown` from the moment the path went unsatisfied (0 reports at once); if the
///   path comes back inside the window nothing is reported, except a `changed` when the address
///   set, default route or primary interface differ from what was last reported.
/// - The primary interface going admin-down or disappearing is reported at once
///   (`adminDown` / `linkRemoved`), even inside a pending window.
/// - A restore is reported at once, with the downtime counted from when the path went
///   unsatisfied (not from when the loss was reported).
/// - `lost` and `restored` alternate. While lost, reason changes are not reported.
/// - The driver arms exactly one timer, for ``deadline``, and calls ``advance(to:)`` when it fires.
public struct NetworkPathTracker: Sendable {
    /// What one input produced: transitions to publish, and the instant (if any) at which the
    /// driver must call ``advance(to:)``. A nil deadline means no timer.
    public struct Step: Hashable, Sendable {
        public var transitions: [PathTransition]
        public var deadline: ContinuousClock.Instant?
    }

    public let filter: InterfaceFilter
    public let holdDown: Duration
    /// The path as last reported to subscribers; nil before the first update.
    public private(set) var reported: NetworkPath?
    /// The path derived from the latest snapshot.
    public private(set) var current: NetworkPath?
    /// When a reported loss becomes due; nil when no loss is pending.
    public private(set) var deadline: ContinuousClock.Instant?
    /// When the derived path last went from satisfied to unsatisfied (nil while satisfied).
    private var unsatisfiedSince: ContinuousClock.Instant?

    public init(filter: InterfaceFilter = .all, holdDown: Duration) {
        precondition(holdDown >= .zero, "holdDown must not be negative")
        self.filter = filter
        self.holdDown = holdDown
    }

    /// Feeds the facts after a batch of events.
    public mutating func update(_ snapshot: NetworkSnapshot, at now: ContinuousClock.Instant) -> Step {
        let path = NetworkPath.derive(from: snapshot, filter: filter)
        current = path
        guard let reported else {
            self.reported = path
            if !path.isSatisfied { unsatisfiedSince = now }
            return Step(transitions: [PathTransition(kind: .initial, path: path, at: now)], deadline: nil)
        }
        if path.isSatisfied {
            deadline = nil
            let downtime = unsatisfiedSince.map { now - $0 }
            unsatisfiedSince = nil
            self.reported = path
            if !reported.isSatisfied {
                let kind = PathTransition.Kind.restored(downtime: downtime ?? .zero)
                return Step(transitions: [PathTransition(kind: kind, path: path, previous: reported, at: now)])
            }
            guard let change = Self.change(from: reported, to: path) else { return Step(transitions: []) }
            return Step(transitions: [PathTransition(kind: .changed(change), path: path, previous: reported, at: now)])
        }
        if unsatisfiedSince == nil { unsatisfiedSince = now }
        guard reported.isSatisfied else {
            self.reported = path  // Still lost: keep the freshest reason, report nothing.
            return Step(transitions: [])
        }
        if let reason = Self.immediateReason(primary: reported.primaryInterface, in: snapshot) {
            return reportLoss(reason, path: path, previous: reported, at: now)
        }
        if holdDown == .zero { return reportLoss(path.lossReason, path: path, previous: reported, at: now) }
        if deadline == nil { deadline = unsatisfiedSince! + holdDown }
        if now >= deadline! { return reportLoss(path.lossReason, path: path, previous: reported, at: now) }
        return Step(transitions: [], deadline: deadline)
    }

    /// Called when the timer armed for ``deadline`` fires (early or late calls are harmless).
    public mutating func advance(to now: ContinuousClock.Instant) -> Step {
        guard let deadline, let reported, let current else { return Step(transitions: [], deadline: nil) }
        guard now >= deadline else { return Step(transitions: [], deadline: deadline) }
        return reportLoss(current.lossReason, path: current, previous: reported, at: now)
    }

    private mutating func reportLoss(
        _ reason: LossReason, path: NetworkPath, previous: NetworkPath, at now: ContinuousClock.Instant
    ) -> Step {
        deadline = nil
        var path = path
        path.status = .unsatisfied(reason)
        reported = path
        return Step(transitions: [PathTransition(kind: .lost(reason), path: path, previous: previous, at: now)])
    }

    /// `adminDown` or `linkRemoved` when the reported primary interface is gone or down.
    private static func immediateReason(primary: InterfaceRef?, in snapshot: NetworkSnapshot) -> LossReason? {
        guard let primary else { return nil }
        guard let link = snapshot.links[primary.ifindex] else { return .linkRemoved }
        return link.isAdminUp ? nil : .adminDown
    }

    /// The most significant difference between two satisfied paths, if any.
    static func change(from old: NetworkPath, to new: NetworkPath) -> PathChange? {
        if old.primaryInterface?.ifindex != new.primaryInterface?.ifindex { return .interfaceSwitched }
        if Set(old.addresses) != Set(new.addresses) { return .address }
        if old.defaultRoutes != new.defaultRoutes { return .defaultRoute }
        return nil
    }
}

extension NetworkPathTracker.Step {
    init(transitions: [PathTransition]) { self.init(transitions: transitions, deadline: nil) }
}

extension NetworkPath {
    /// The loss reason, or `noInterface` for a satisfied path (callers check first).
    public var lossReason: LossReason {
        if case .unsatisfied(let reason) = status { return reason }
        return .noInterface
    }
}
