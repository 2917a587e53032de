public import ResilienceCore

/// The pure rules engine: state in, ordered decisions out, time passed in, no I/O.
///
/// Invariants:
/// - Deterministic: the same engine value, trigger, services and instant give the same actions.
/// - No action brings up a service whose level in the current app state is `.none`.
/// - Within one batch, `PlannedAction.after` orders registration before the same account's
///   subscriptions, calls and publishes, and teardown before unregister on shutdown.
/// - While the network is lost, only teardown-free bookkeeping happens: no action is planned
///   that needs the network until a `restored` or `changed` trigger.
public struct RulesEngine: Sendable, Hashable {
    /// The policy in force.
    public var policy: Policy
    /// The app state, updated by `.app` triggers.
    public private(set) var appState: AppState
    /// Whether the network path is satisfied, updated by `.network` triggers.
    public private(set) var networkAvailable: Bool
    /// Calls the last `interrupted` put on hold; only these are resumed by `interruptionEnded`.
    public private(set) var callsHeldByInterruption: Set<ServiceID>

    public init(policy: Policy = .default, appState: AppState = .foreground, networkAvailable: Bool = true) {
        self.policy = policy
        self.appState = appState
        self.networkAvailable = networkAvailable
        self.callsHeldByInterruption = []
    }

    /// Decides the ordered actions for one trigger.
    /// - Parameters:
    ///   - trigger: what happened.
    ///   - services: every service the client runs, in their current state (call states included).
    ///   - now: the instant of the trigger (used for expiry checks such as `resumed`).
    public mutating func decide(_ trigger: Trigger, services: [ClientService], at now: ContinuousClock.Instant)
        -> [PlannedAction]
    {
        fatalError("RulesEngine.decide is implemented by the policy issue")
    }

    /// The level a service runs at in an app state under the current policy.
    public func level(of service: ClientService, in state: AppState) -> ServiceLevel {
        fatalError("RulesEngine.level is implemented by the policy issue")
    }
}

/// Everything a policy file can set. `Policy.default` is the seed's service table.
public struct Policy: Sendable, Hashable {
    /// How long a loss must last before it is reported (0 allowed).
    public var lossHoldDown: Duration
    public var backoff: BackoffPolicy
    /// The shortest interval between keep-alive wake-ups while in background (iOS: 600 s).
    public var keepAliveMinimumInterval: Duration
    /// Refresh registrations and subscriptions this long before they expire.
    public var refreshMargin: Duration

    public init(
        lossHoldDown: Duration = .seconds(2),
        backoff: BackoffPolicy = BackoffPolicy(),
        keepAliveMinimumInterval: Duration = .seconds(600),
        refreshMargin: Duration = .seconds(30)
    ) {
        self.lossHoldDown = lossHoldDown
        self.backoff = backoff
        self.keepAliveMinimumInterval = keepAliveMinimumInterval
        self.refreshMargin = refreshMargin
    }

    /// The seed's service table (Avaya Client SDK, "Backgrounding and battery considerations").
    public static let `default` = Policy()
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
