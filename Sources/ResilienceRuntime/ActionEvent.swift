public import ResilienceCore

/// What happened to one attempt of one planned action.
public enum ActionOutcome: Hashable, Sendable, CustomStringConvertible {
    /// The plugin was handed the action.
    case started
    case succeeded
    /// A permanent failure (`PluginError/isRetryable` false, or no plugin performs the action and
    /// it is not an optional step).
    case failed(PluginError)
    /// A retryable failure; the next attempt starts at the instant, or when the path is restored
    /// or the suspended app wakes (`nil`): nothing is retried while the path is unsatisfied, nor
    /// (for work decided before the suspension) while the app is suspended.
    case retrying(at: ContinuousClock.Instant?, error: PluginError)
    /// Cancelled while running: a new network loss ended its epoch, or the executor shut down.
    case cancelled
    /// Replaced by a newer action for the same service before it started.
    case superseded
    /// Ran past its deadline and was cancelled (a retry follows, reported as `retrying`).
    case timedOut
    /// Not carried out, and not a failure: no plugin performs this optional step
    /// (`ActionKind.optionalSteps`, e.g. `close-stale-transports`) for the service, whose
    /// stack has nothing the step would act on. The service's next action starts at once.
    case skipped

    /// A short metric and log label: `started`, `succeeded`, `failed`, `retrying`, ...
    public var label: String {
        switch self {
        case .started: "started"
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .retrying: "retrying"
        case .cancelled: "cancelled"
        case .superseded: "superseded"
        case .timedOut: "timed-out"
        case .skipped: "skipped"
        }
    }

    /// The label and the plugin's error, as `netres run` logs them: `retrying (503 Service Unavailable)`.
    public var description: String { pluginError.map { "\(label) (\($0))" } ?? label }
}

/// One observable step of the executor: an attempt started, or an outcome.
public struct ActionEvent: Hashable, Sendable {
    public var action: PlannedAction
    /// The network epoch the action was decided in.
    public var epoch: NetworkEpoch
    /// 1 for the first try.
    public var attempt: Int
    public var outcome: ActionOutcome
    /// When it happened, on the executor's clock.
    public var at: ContinuousClock.Instant

    public init(
        action: PlannedAction, epoch: NetworkEpoch, attempt: Int, outcome: ActionOutcome, at: ContinuousClock.Instant
    ) {
        self.action = action
        self.epoch = epoch
        self.attempt = attempt
        self.outcome = outcome
        self.at = at
    }
}
