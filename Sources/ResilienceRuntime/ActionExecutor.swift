public import Logging
public import Metrics
public import ResilienceCore
public import ResilienceRules

/// Carries out planned actions through plugins: in order, once, without storms, and never
/// against a dead network.
///
/// Invariants (ARCHITECTURE.md, "Executor rules"):
/// - Per service, at most one action runs and at most one *decision* is pending. A pending
///   decision is the list of that service's actions from one ``submit(_:epoch:)`` batch, run in
///   order; a newer batch for the service replaces it, and the replaced actions are reported
///   ``ActionOutcome/superseded`` without ever reaching a plugin. A running action of an older
///   batch whose kind the newer batch does again is cancelled (Task cancellation) and reported
///   superseded too, so the redo starts at once instead of after a stale attempt. Exception: a
///   batch of flow pings (`ActionKind.pingFlow`) alone never replaces or stops other work of
///   the service; the pings are reported superseded instead (the other work uses the flow too).
/// - Every action carries the `NetworkEpoch` it was decided in. A loss that starts a newer epoch
///   cancels the running actions of older epochs (Task cancellation, visible to the plugin) and
///   reports them ``ActionOutcome/cancelled``; a cancelled or superseded action is never reported
///   as succeeded, whatever its plugin returns later.
/// - An action whose `after` names other services starts only when those services have nothing
///   running or pending (registration before the same account's subscriptions and calls; their
///   teardown before unregister): from its batch, an older one, or a newer one that replaced the
///   prerequisite's work of its batch. A prerequisite whose next action
///   itself waits for the dependent does not block it, so a batch's two phases of one service
///   (bring-up first, unregister last) cannot deadlock.
/// - A retryable failure or a timeout is retried after a jittered exponential backoff, or after
///   the plugin's `Retry-After` when that is longer; a `Retry-After` above the backoff maximum is
///   capped at it, and no retry comes sooner than `BackoffPolicy.minimumDelay`. Every retry
///   instant is computed with `TimeBounds` (no outside value can overflow it). While the path is unsatisfied nothing is retried and actions of
///   older epochs do not start; on restore the backoff resets and everything held starts at once.
/// - While the app is suspended (``setSuspended(_:keepingAwake:then:epoch:)``), work decided
///   before the suspension (a retry in backoff, an action waiting for its prerequisite) waits
///   with no timer armed, unless its service is kept awake (a push-woken account, a call); work
///   the rules decide while suspended runs. On waking it starts at once.
/// - Local actions (`ActionKind/isLocal`, or in their plugin's `localActions`) are the
///   exception: they start and retry while the path is unsatisfied, and a loss does not cancel them.
/// - An action no plugin performs never holds up the service: it is reported `failed`, or
///   `skipped` when its kind is one of `ActionKind.optionalSteps`, and the service's next action
///   starts (its dependents are released) at once.
/// - Every attempt has a deadline (`Configuration.actionTimeout`) and every outcome is observable
///   through ``events()``, the `onEvent` sink, logs and metrics.
public actor ActionExecutor {
    /// Tuning of retries and timeouts.
    public struct Configuration: Sendable {
        public var backoff: BackoffPolicy
        /// How long one attempt may run before it is cancelled and reported `timedOut`.
        public var actionTimeout: Duration
        /// Seed for the jitter; nil draws from the system generator.
        public var randomSeed: UInt64?
        /// Where metrics go; nil for the bootstrapped `MetricsSystem` (tests pass `TestMetrics`).
        public var metricsFactory: (any MetricsFactory)?
        /// The policy's `call-survival-budget`, handed to plugins with every action
        /// (`PluginContext.callSurvivalBudget`); nil leaves each plugin's default.
        public var callSurvivalBudget: Duration?

        public init(
            backoff: BackoffPolicy = BackoffPolicy(), actionTimeout: Duration = .seconds(30), randomSeed: UInt64? = nil,
            metricsFactory: (any MetricsFactory)? = nil, callSurvivalBudget: Duration? = nil
        ) {
            self.backoff = backoff
            self.actionTimeout = actionTimeout
            self.randomSeed = randomSeed
            self.metricsFactory = metricsFactory
            self.callSurvivalBudget = callSurvivalBudget
        }
    }

    /// What one service is doing, for status snapshots.
    public struct ServiceStatus: Hashable, Sendable {
        public var running: PlannedAction?
        /// The pending actions, next first.
        public var pending: [PlannedAction]
        /// The attempt number of the running action, or of the next retry.
        public var attempt: Int
        /// When the next retry starts; nil when none is scheduled.
        public var retryAt: ContinuousClock.Instant?
        /// True when the next action waits for the path to be restored.
        public var waitingForPath: Bool
        /// True when the next action waits for the app to leave `suspended`.
        public var waitingForWakeUp: Bool
    }

    struct Queued {
        var action: PlannedAction
        var epoch: NetworkEpoch
        var batch: UInt64
        var attempt: Int
        var isRetry: Bool
        var notBefore: ContinuousClock.Instant?
        var submittedAt: ContinuousClock.Instant
    }

    struct Running {
        var queued: Queued
        var token: UInt64
        var task: Task<Void, Never>
        var timer: Task<Void, Never>
        var startedAt: ContinuousClock.Instant
    }

    struct Slot {
        var running: Running?
        var pending: [Queued] = []
        /// Consecutive failures, the backoff exponent; reset on success and on restore.
        var failures = 0
        var retryTimer: Task<Void, Never>?
        var isIdle: Bool { running == nil && pending.isEmpty }
    }

    let plugins: [any ResiliencePlugin]
    let clock: any RuntimeClock
    let configuration: Configuration
    let logger: Logger
    let onEvent: (@Sendable (ActionEvent) -> Void)?
    let broadcast = Broadcast<ActionEvent>()
    let metrics: ExecutorMetrics
    var random: SplitMix64
    var slots: [ServiceID: Slot] = [:]
    /// Prerequisite service → services whose next action waits for it to become idle.
    var dependents: [ServiceID: Set<ServiceID>] = [:]
    /// Services that are not idle; empty means ``waitUntilIdle()`` returns.
    var active: Set<ServiceID> = []
    var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    /// The path as the manager's rules engine last decided it (handed over in decision order by
    /// ``networkChanged(_:network:epoch:then:restoredAfter:)``): what plugins see in their context.
    var path: NetworkPath
    /// Derived from ``path``, never stored beside it.
    var pathSatisfied: Bool { path.isSatisfied }
    var network: NetworkSnapshot
    /// The last loss of the path that ended (``networkChanged(_:network:epoch:then:restoredAfter:)``).
    var lastPathLoss: Range<ContinuousClock.Instant>?
    var epoch = NetworkEpoch.initial
    /// Set while the app is suspended: what waits for it to wake (`ActionExecutor+Suspension.swift`).
    var suspension: SuspensionHold?
    var nextToken: UInt64 = 0
    var nextBatch: UInt64 = 0

    /// - Parameters:
    ///   - plugins: each action goes to the first plugin that `ResiliencePlugin.performs(_:for:)`
    ///     its kind for its service; an action no plugin performs fails permanently, unless its
    ///     kind is one of `ActionKind.optionalSteps` (then it is skipped); either way the
    ///     service's next action starts.
    ///   - clock: every deadline, backoff and latency is measured on it.
    ///   - configuration: backoff, timeout, jitter seed and metrics.
    ///   - path: the path at start; actions wait for it when unsatisfied.
    ///   - network: the snapshot plugins see until the first change.
    ///   - logger: one line per outcome.
    ///   - onEvent: a synchronous sink called on the executor for every event, before ``events()``.
    public init(
        plugins: [any ResiliencePlugin],
        clock: any RuntimeClock = ContinuousClock(),
        configuration: Configuration = Configuration(),
        path: NetworkPath = NetworkPath(status: .satisfied),
        network: NetworkSnapshot = .empty,
        logger: Logger = Logger(label: "netres.executor"),
        onEvent: (@Sendable (ActionEvent) -> Void)? = nil
    ) {
        self.plugins = plugins
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        self.onEvent = onEvent
        self.metrics = ExecutorMetrics(factory: configuration.metricsFactory)
        self.path = path
        self.network = network
        var seeder = SystemRandomNumberGenerator()
        self.random = SplitMix64(seed: configuration.randomSeed ?? seeder.next())
    }

    /// Every event from now on; any number of subscribers.
    public nonisolated func events() -> AsyncStream<ActionEvent> { broadcast.subscribe() }

    /// Queues one decision batch. Per service, the batch's actions replace whatever was pending.
    public func submit(_ actions: [PlannedAction], epoch: NetworkEpoch) {
        guard !actions.isEmpty else { return }
        nextBatch += 1
        let now = clock.now
        var order: [ServiceID] = []
        var byService: [ServiceID: [Queued]] = [:]
        for action in actions {
            let queued = Queued(
                action: action, epoch: epoch, batch: nextBatch, attempt: 1, isRetry: false,
                notBefore: nil,
                submittedAt: now)
            if byService[action.service] == nil { order.append(action.service) }
            byService[action.service, default: []].append(queued)
        }
        for id in order { replacePending(of: id, with: byService[id]!) }
        for id in order { tryStart(id) }
    }

    /// Reports a new path. A loss (satisfied → unsatisfied) with a newer `epoch` cancels the
    /// running actions of older epochs and holds every retry; a restore resets the backoff and
    /// starts everything held at once, after `actions` (the restore decision) replaced what they
    /// supersede.
    public func networkChanged(
        _ path: NetworkPath, network: NetworkSnapshot, epoch: NetworkEpoch, then actions: [PlannedAction] = [],
        restoredAfter downtime: Duration? = nil
    ) {
        if let downtime {
            let now = clock.now
            lastPathLoss = now.adding(clamped: .zero - max(downtime, .zero))..<now
        }
        let wasSatisfied = pathSatisfied
        self.path = path
        self.network = network
        if epoch > self.epoch { self.epoch = epoch }
        if wasSatisfied && !path.isSatisfied {
            holdEverything(olderThan: epoch)
        } else if !wasSatisfied && path.isSatisfied {
            releaseHeld()
        }
        submit(actions, epoch: epoch)
        if !wasSatisfied && path.isSatisfied {
            for id in Array(active) { tryStart(id) }
        }
    }

    /// Cancels every running action and drops everything pending (reported `superseded`).
    public func cancelAll() {
        for id in Array(active) {
            guard var slot = slots[id] else { continue }
            if let running = slot.running {
                stop(running, outcome: .cancelled)
                slot.running = nil
            }
            for queued in slot.pending { report(queued, .superseded) }
            slot.pending = []
            slot.retryTimer?.cancel()
            slot.retryTimer = nil
            store(slot, for: id)
        }
        dependents = [:]
    }

    /// Returns when no service has anything running or pending (at once when idle already).
    public func waitUntilIdle() async {
        guard !active.isEmpty else { return }
        nextToken += 1
        let token = nextToken
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if active.isEmpty || Task.isCancelled {
                    continuation.resume()
                } else {
                    idleWaiters[token] = continuation
                }
            }
        } onCancel: {
            Task { await self.resumeIdleWaiter(token) }
        }
    }

    /// What every non-idle service is doing.
    public func status() -> [ServiceID: ServiceStatus] {
        var out: [ServiceID: ServiceStatus] = [:]
        for id in active {
            guard let slot = slots[id] else { continue }
            let next = slot.pending.first
            out[id] = ServiceStatus(
                running: slot.running?.queued.action,
                pending: slot.pending.map(\.action),
                attempt: slot.running?.queued.attempt ?? next?.attempt ?? 1,
                retryAt: next?.notBefore,
                waitingForPath: next.map { isHeldForPath($0) } ?? false,
                waitingForWakeUp: next.map { isHeldWhileSuspended($0) } ?? false)
        }
        return out
    }

    /// True when the path is satisfied as far as the executor knows.
    public var isPathSatisfied: Bool { pathSatisfied }
}
