public import ResilienceCore

/// Everything a policy file can set. `Policy.default` is the seed's service table.
///
/// Invariant: ``level(of:in:)`` picks the most specific matching level row (the later row on a tie);
/// a service no row matches runs at `.full`.
public struct Policy: Sendable, Hashable {
    /// How long a loss must last before it is reported (0 allowed).
    public var holdDown: Duration
    public var backoff: BackoffPolicy
    /// The shortest interval between scheduler wake-ups while in background (iOS: 600 s).
    public var wakeUpMinimumInterval: Duration
    /// Refresh registrations and subscriptions this long before they expire.
    public var refreshMargin: Duration
    /// The service-level table, in file order.
    public var levels: [ServiceLevelRow]
    /// The rules, in evaluation order.
    public var rules: [Rule]

    public init(
        holdDown: Duration = .seconds(2),
        backoff: BackoffPolicy = BackoffPolicy(),
        wakeUpMinimumInterval: Duration = .seconds(600),
        refreshMargin: Duration = .seconds(30),
        levels: [ServiceLevelRow] = Policy.defaultLevels,
        rules: [Rule] = Policy.defaultRules
    ) {
        self.holdDown = holdDown
        self.backoff = backoff
        self.wakeUpMinimumInterval = wakeUpMinimumInterval
        self.refreshMargin = refreshMargin
        self.levels = levels
        self.rules = rules
    }

    /// The seed's service table (Avaya Client SDK, "Backgrounding and battery considerations").
    public static let `default` = Policy()

    /// The row that decides a kind's level, or nil when no row matches.
    public func row(for kind: ServiceKind) -> ServiceLevelRow? {
        var best: ServiceLevelRow?
        for row in levels where row.selector.matches(kind) {
            if let current = best, row.selector.specificity < current.selector.specificity { continue }
            best = row
        }
        return best
    }

    /// The level a kind of service runs at in an app state.
    public func level(of kind: ServiceKind, in state: AppState) -> ServiceLevel {
        row(for: kind)?.level(in: state) ?? .full
    }
}

/// Jittered exponential backoff (the gRPC connection-backoff numbers by default).
public struct BackoffPolicy: Sendable, Hashable, Codable {
    public var initial: Duration
    public var multiplier: Double
    /// Relative jitter: 0.2 means ±20 %.
    public var jitter: Double
    public var maximum: Duration

    public init(
        initial: Duration = .seconds(1),
        multiplier: Double = 1.6,
        jitter: Double = 0.2,
        maximum: Duration = .seconds(120)
    ) {
        self.initial = initial
        self.multiplier = multiplier
        self.jitter = jitter
        self.maximum = maximum
    }
}
