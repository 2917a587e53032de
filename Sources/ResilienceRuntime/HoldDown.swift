import ResilienceCore

/// The manager's hold-down: a `lost` transition waits ``duration`` before it is decided, and is
/// dropped with its `restored` when the path comes back inside the window. A pure value: the
/// owner passes the time in and arms one timer for ``deadline``.
///
/// This is the ONE place a policy's hold-down is applied, so it works for every
/// ``NetworkEventSource`` (sources report losses as they happen and do not hold them down).
///
/// Invariants:
/// - A loss whose reason counts at once (`adminDown`, `linkRemoved`), or any loss with a zero
///   hold-down, passes straight through.
/// - At most one loss is held; its deadline is `lost.at + duration` (from when it happened).
/// - A `restored` while a loss is held drops both (the owner reports them as a coalesced flap,
///   and a `changed` when the path came back different); any other transition releases the held
///   loss first.
/// - ``release(at:)`` before the deadline returns nothing and keeps the loss held.
struct HoldDown: Sendable {
    /// How long a loss must last before it is decided (zero decides at once).
    let duration: Duration
    /// The loss waiting for its deadline, if any.
    private(set) var held: PathTransition?

    init(_ duration: Duration) {
        self.duration = max(duration, .zero)
    }

    /// When the held loss falls due; nil when none is held.
    var deadline: ContinuousClock.Instant? { held.map { $0.at + duration } }

    /// What one transition from the source becomes.
    enum Outcome: Equatable {
        /// Decide these now, in order.
        case pass([PathTransition])
        /// The path came back inside the window: neither is decided (nor reported).
        case dropped(lost: PathTransition, restored: PathTransition)
    }

    /// Holds a loss, drops a loss with its restore inside the window, passes everything else.
    mutating func receive(_ transition: PathTransition) -> Outcome {
        if case .lost(let reason) = transition.kind, duration > .zero, !Self.countsAtOnce(reason) {
            held = transition
            return .pass([])
        }
        defer { held = nil }
        guard let held else { return .pass([transition]) }
        if case .restored = transition.kind { return .dropped(lost: held, restored: transition) }
        return .pass([held, transition])
    }

    /// The held loss once `now` reaches its deadline (early calls return nothing).
    mutating func release(at now: ContinuousClock.Instant) -> PathTransition? {
        guard let deadline, now >= deadline else { return nil }
        defer { held = nil }
        return held
    }

    /// Losses that are certain at once: the interface was taken down or removed.
    static func countsAtOnce(_ reason: LossReason) -> Bool {
        reason == .adminDown || reason == .linkRemoved
    }
}
