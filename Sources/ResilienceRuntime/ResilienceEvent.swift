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
}
