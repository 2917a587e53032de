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
    /// How repeated losses of the path, and repeated app-state changes, are damped.
    public var flapDamping: FlapDampingPolicy
    /// A call whose path was lost longer than this is ended (BYE) when the path returns, and
    /// reported ended by the outage with its downtime, instead of re-INVITEd; `.zero` keeps calls
    /// across any outage. The manager hands it to plugins with every action
    /// (`PluginContext.callSurvivalBudget`).
    public var callSurvivalBudget: Duration
    /// How long an account a push woke stays awake while the app is suspended (for the call or
    /// message it was woken for) before it may sleep again (`push.window-ended`); an account with
    /// a call stays awake until the call is over. The seeds' platform gives a woken app ~10 s.
    public var pushWakeWindow: Duration
    /// The service-level table, in file order.
    public var levels: [ServiceLevelRow]
    /// The rules, in evaluation order.
    public var rules: [Rule]

    public init(
        holdDown: Duration = .seconds(2),
        backoff: BackoffPolicy = BackoffPolicy(),
        wakeUpMinimumInterval: Duration = .seconds(600),
        refreshMargin: Duration = .seconds(30),
        flapDamping: FlapDampingPolicy = FlapDampingPolicy(),
        callSurvivalBudget: Duration = .seconds(30),
        pushWakeWindow: Duration = .seconds(10),
        levels: [ServiceLevelRow] = Policy.defaultLevels,
        rules: [Rule] = Policy.defaultRules
    ) {
        self.holdDown = holdDown
        self.backoff = backoff
        self.wakeUpMinimumInterval = wakeUpMinimumInterval
        self.refreshMargin = refreshMargin
        self.flapDamping = flapDamping
        self.callSurvivalBudget = callSurvivalBudget
        self.pushWakeWindow = pushWakeWindow
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

/// Route-flap damping (RFC 2439's model) for path losses and app-state changes.
///
/// Each flap adds `penalty`; the penalty halves every `halfLife`. When it reaches
/// `suppressThreshold`, the actions a return (or a state change) would cause wait until it has
/// decayed below `reuseThreshold`; it never exceeds the value that takes `maximumSuppression` to
/// decay to `reuseThreshold`, so no suppression outlasts the last flap by more than that.
/// Invariant of the defaults: one flap, or two, acts at once (`penalty` × 2 < `suppressThreshold`).
public struct FlapDampingPolicy: Sendable, Hashable, Codable {
    public var penalty: Double
    public var suppressThreshold: Double
    public var reuseThreshold: Double
    public var halfLife: Duration
    public var maximumSuppression: Duration

    public init(
        penalty: Double = 1000, suppressThreshold: Double = 2500, reuseThreshold: Double = 750,
        halfLife: Duration = .seconds(10), maximumSuppression: Duration = .seconds(30)
    ) {
        self.penalty = penalty
        self.suppressThreshold = suppressThreshold
        self.reuseThreshold = reuseThreshold
        self.halfLife = halfLife
        self.maximumSuppression = maximumSuppression
    }

    /// Never suppresses: every flap acts at once.
    public static let off = FlapDampingPolicy(penalty: 0)
}
