public import ResilienceCore

/// Everything the manager observes and does, in the order it happened.
public enum ResilienceEvent: Hashable, Sendable {
    /// A path transition from the network source (`.initial` first).
    case transition(PathTransition)
    /// The host app reported a lifecycle event; `state` is the app state after it.
    case app(AppEvent, state: AppState)
    /// The rules engine decided `actions` for `trigger` in `epoch` (possibly none) at `at`, on
    /// the manager's clock: before any of those actions started.
    case decision(trigger: Trigger, epoch: NetworkEpoch, actions: [PlannedAction], at: ContinuousClock.Instant)
    /// A lost and a restored arrived before either was decided: both were dropped.
    case flapCoalesced(lost: PathTransition, restored: PathTransition)
    /// An action started or ended.
    case action(ActionEvent)
    /// Flap damping held a trigger (the path returned, or the app changed state, while flapping)
    /// or released what it held.
    case damping(DampingEvent)
    /// The suspended app held work decided before the suspension, or released it (one event per
    /// change, not per service).
    case suspensionHold(SuspensionHoldEvent)
}

/// What flap damping did with one trigger.
public struct DampingEvent: Hashable, Sendable {
    /// Which damping: path losses or app-state changes.
    public enum Source: String, Hashable, Sendable {
        case network
        case app
    }

    public var source: Source
    /// The trigger held or released.
    public var trigger: Trigger
    /// True when `trigger` is decided now, after a suppression ended.
    public var released: Bool
    /// The damping penalty at `at`.
    public var penalty: Double
    /// When a held trigger will be released if no further flap comes.
    public var until: ContinuousClock.Instant?
    public var at: ContinuousClock.Instant

    public init(
        source: Source, trigger: Trigger, released: Bool, penalty: Double, until: ContinuousClock.Instant?,
        at: ContinuousClock.Instant
    ) {
        self.source = source
        self.trigger = trigger
        self.released = released
        self.penalty = penalty
        self.until = until
        self.at = at
    }
}

/// Flap damping as `status()` shows it.
public struct DampingStatus: Hashable, Sendable {
    /// Current penalties of path losses and of app-state changes.
    public var networkPenalty: Double
    public var appPenalty: Double
    /// When held triggers will be released; nil when nothing is held.
    public var networkHeldUntil: ContinuousClock.Instant?
    public var appHeldUntil: ContinuousClock.Instant?
    /// Flaps counted since start.
    public var networkFlaps: Int
    public var appChanges: Int
}

/// A snapshot of the manager's state.
public struct ResilienceStatus: Hashable, Sendable {
    public var path: NetworkPath
    public var appState: AppState
    public var isInterrupted: Bool
    public var epoch: NetworkEpoch
    /// Registered services, sorted by identifier.
    public var services: [ClientService]
    /// What every busy service is doing; idle services are absent.
    public var actions: [ServiceID: ActionExecutor.ServiceStatus]
    /// When the wake-up scheduler wakes next; nil when nothing is due (zero wake-ups).
    public var nextWakeUp: ContinuousClock.Instant?
    /// Triggers received but not yet decided.
    public var queuedTriggers: Int
    /// Flap damping: penalties and what it holds.
    public var damping: DampingStatus
}
