public import Logging
public import Metrics
public import ResilienceCore
public import ResilienceRules
public import ServiceLifecycle

/// The facade a client stack embeds: network source + policy + plugins, run as a `Service`.
///
/// ```swift
/// let manager = ResilienceManager(source: monitor, plugins: [sip, http], logger: logger)
/// let group = ServiceGroup(services: [manager], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// Invariants:
/// - Triggers (path transitions, app events, call-state changes, refresh and flow-ping wake-ups, flow
///   losses) are decided one at a time in arrival order, and their actions reach the
///   ``ActionExecutor`` in that order.
/// - `started` is decided exactly once, right after the initial path has been handed to the
///   executor, satisfied or not (the rules plan nothing that needs the network while it is down;
///   `network.restored` brings the services up later).
/// - Plugins' flow losses become `flow.lost` triggers through a ``FlowLossThrottle`` whose delays
///   run on the manager's clock; a held loss is dropped for each service whose action succeeded
///   after it (a success the manager records before anyone sees its event); each plugin's
///   `reports` stream is read once, by ``run()``, and every report is applied in order (`PluginReport`).
/// - A `lost` waits the policy's `Policy.holdDown` (on the manager's clock) before it is
///   decided, unless the interface went admin-down or away (`HoldDown`); sources do not
///   hold losses down, so what an app sets in its policy is what applies.
/// - A `lost` followed by a `restored` before the `lost` was decided cancels out: neither is
///   decided, the epoch does not change, and ``ResilienceEvent/flapCoalesced(lost:restored:)`` says so.
/// - A successful action of a service is traffic its flow carried and answered: the service's
///   next flow ping is re-armed from then (``WakeUpScheduler/flowActive(_:)``), so a successful
///   REGISTER is never followed by a ping at the old deadline.
/// - Every loss starts a new `NetworkEpoch`; every decision carries the epoch current then.
/// - Every plugin hears the path through `ResiliencePlugin.pathChanged(_:)` before the executor
///   gets it: the initial path, then each decided transition's (so a loss holds a plugin's own
///   traffic exactly when the executor starts holding actions).
/// - Service calls (`register`, `update`, `remove`) take effect at once for ``status()``; app
///   events (`handle`, `setAppState`) and path transitions once decided: the app state, the
///   interruption and the network path (availability is derived from it) have one owner, the
///   rules engine. Status, the scheduler and the executor read them from there, so ``status()``'s
///   path is the one the executor hands plugins and the decisions were made on.
/// - Suspended is asleep: work decided before the suspension (a retry in backoff) waits for the
///   app to wake, except a push-woken account's or a call's (`ResilienceManager+Suspension.swift`).
/// - Suspended wakes for nothing: a service not kept awake arms no refresh (no ping) for which
///   the rules in force would decide nothing in that state, nor any if its account has a push
///   token (``WakeUpScheduler/setAsleep(refreshes:pings:)``, `ResilienceManager+Push.swift`).
/// - Flap damping (``FlapDamping``, configured by `Policy.flapDamping`): every loss of the path
///   and every app-state change counts as a flap. While suppressed, a return of the path and
///   app-state changes are held, not decided (nothing is sent meanwhile: the rules engine and the
///   executor still see the path lost and the app in its decided state); when the penalty has
///   decayed, the latest held return, and the events leading from the decided app state to the
///   reported one, are decided once. A loss while a return is held drops it.
///   ``ResilienceEvent/damping(_:)``, ``status()`` and the counter `netres.damped` (dimension
///   `source`) show it.
/// - On graceful shutdown the manager stops deciding, submits `decide(.shutdown)`, drops what a
///   suspended app holds (superseded), waits at most `Configuration.shutdownTimeout` (on its
///   clock) for the rest, cancels whatever still runs,
///   then shuts the plugins down in reverse order and waits at most
///   `Configuration.pluginShutdownTimeout` for them. A hanging plugin cannot delay it further:
///   `run()` returns within the sum of the two.
public actor ResilienceManager: Service {
    /// Knobs beyond the policy.
    public struct Configuration: Sendable {
        /// How long one action attempt may run.
        public var actionTimeout: Duration
        /// How long teardown may take on graceful shutdown.
        public var shutdownTimeout: Duration
        /// How long the plugins may take to stop after teardown (closing flows); past it the
        /// manager cancels them and returns anyway.
        public var pluginShutdownTimeout: Duration
        /// In the foreground, refreshes and pings due this close together share a wake-up.
        public var wakeUpCoalescingWindow: Duration
        /// Seed for backoff, flow-loss and flow-ping jitter (reproducible tests); nil for the
        /// system generator.
        public var randomSeed: UInt64?
        /// Where metrics go; nil for the bootstrapped `MetricsSystem`.
        public var metricsFactory: (any MetricsFactory)?
        /// The machine's total time suspended since boot, read whenever a trigger is decided: a
        /// jump of more than 5 s is a system sleep, reported as `app.resumed` (tests pass their own).
        public var timeAsleep: @Sendable () -> Duration

        public init(
            actionTimeout: Duration = .seconds(30), shutdownTimeout: Duration = .seconds(5),
            wakeUpCoalescingWindow: Duration = .seconds(10), randomSeed: UInt64? = nil,
            metricsFactory: (any MetricsFactory)? = nil,
            timeAsleep: @escaping @Sendable () -> Duration = SleepDetector.systemTimeAsleep,
            pluginShutdownTimeout: Duration = .milliseconds(500)
        ) {
            self.actionTimeout = actionTimeout
            self.shutdownTimeout = shutdownTimeout
            self.pluginShutdownTimeout = pluginShutdownTimeout
            self.wakeUpCoalescingWindow = wakeUpCoalescingWindow
            self.randomSeed = randomSeed
            self.metricsFactory = metricsFactory
            self.timeAsleep = timeAsleep
        }
    }

    /// A decision function replacing the rules engine (custom policies, tests).
    public typealias Decide = @Sendable (Trigger, [ClientService], ContinuousClock.Instant) -> [PlannedAction]

    struct QueuedTrigger {
        var trigger: Trigger
        var transition: PathTransition?
        /// Released by flap damping: decided without counting as a flap again.
        var isRelease = false
    }

    let source: any NetworkEventSource
    let plugins: [any ResiliencePlugin]
    let clock: any RuntimeClock
    let configuration: Configuration
    let logger: Logger
    let customDecide: Decide?
    let executor: ActionExecutor
    let scheduler: WakeUpScheduler
    let wakeUps: (stream: AsyncStream<Trigger>, continuation: AsyncStream<Trigger>.Continuation)
    let wake: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    /// Services whose action just succeeded, in order (see ``followFlowActivity()``).
    let succeeded: (stream: AsyncStream<ServiceID>, continuation: AsyncStream<ServiceID>.Continuation)
    let broadcast: Broadcast<ResilienceEvent>
    /// Each service's latest successful action: a held flow loss is moot for it after that.
    let latestSuccesses: LatestSuccesses
    var rules: RulesEngine
    var services: [ServiceID: ClientService] = [:]
    var epoch = NetworkEpoch.initial
    var queue: [QueuedTrigger] = []
    /// Set whenever items join ``queue``: only then can a new lost-restored pair exist, so the
    /// queue is coalesced once per arrival, not once per item decided.
    var queueNeedsCoalescing = false
    var isShuttingDown = false
    var sleepDetector: SleepDetector
    var hasStarted = false
    var flowLosses: FlowLossThrottle
    var flowLossTimer = DeadlineTimer()
    var holdDown: HoldDown
    var holdDownTimer = DeadlineTimer()
    var networkDamping: FlapDamping
    var appDamping: FlapDamping
    /// The latest return of the path that damping holds; nil when none is held.
    var heldNetwork: QueuedTrigger?
    /// When the held network return came (the link has been up since): see ``FlapDamping/releaseInstant(ofReturnAt:)``.
    var heldNetworkSince: ContinuousClock.Instant?
    /// App events damping holds, in order (the rules engine's app state lags them).
    var heldAppEvents: [AppEvent] = []
    var dampingTimer = DeadlineTimer()
    /// `netres.damped` per source: triggers damping held.
    let dampedCounters: [DampingEvent.Source: Counter]
    /// When each woken account's push wake window ends (``push(_:)``).
    var pushWindows: [String: ContinuousClock.Instant] = [:]
    var pushWindowTimer = DeadlineTimer()

    /// - Parameters:
    ///   - source: the network monitor (or a `ScriptedNetworkSource` in tests).
    ///   - policy: hold-down, backoff, minimum wake-up interval, refresh margin, and the rules' policy.
    ///   - plugins: run as services by the manager; actions go to the first that takes them.
    ///   - appState: the app's state at start.
    ///   - clock: every timer of the runtime runs on it.
    ///   - configuration: timeouts, keep-alive coalescing, jitter seed, metrics, sleep detection.
    ///   - logger: the manager's, the executor's and the plugins' logs.
    ///   - decide: replaces `RulesEngine(policy:).decide` when given.
    public init(
        source: any NetworkEventSource,
        policy: Policy = .default,
        plugins: [any ResiliencePlugin],
        appState: AppState = .foreground,
        clock: any RuntimeClock = ContinuousClock(),
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "netres"),
        decide: Decide? = nil
    ) {
        self.source = source
        self.plugins = plugins
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        self.customDecide = decide
        self.rules = RulesEngine(
            policy: policy, appState: appState,
            localActions: plugins.reduce(into: []) { $0.formUnion($1.localActions) })
        let broadcast = Broadcast<ResilienceEvent>()
        self.broadcast = broadcast
        let succeeded = AsyncStream<ServiceID>.makeStream()
        self.succeeded = succeeded
        let latestSuccesses = LatestSuccesses()
        self.latestSuccesses = latestSuccesses
        self.executor = ActionExecutor(
            plugins: plugins, clock: clock,
            configuration: ActionExecutor.Configuration(
                backoff: policy.backoff, actionTimeout: configuration.actionTimeout,
                randomSeed: configuration.randomSeed, metricsFactory: configuration.metricsFactory,
                callSurvivalBudget: policy.callSurvivalBudget),
            logger: logger,
            onEvent: { event in
                if event.outcome == .succeeded { latestSuccesses.record(event.action.service, at: event.at) }
                broadcast.yield(.action(event))
                if event.outcome == .succeeded { succeeded.continuation.yield(event.action.service) }
            })
        let wakeUps = AsyncStream<Trigger>.makeStream()
        self.wakeUps = wakeUps
        self.scheduler = WakeUpScheduler(
            clock: clock, appState: rules.appState,
            configuration: WakeUpScheduler.Configuration(
                refreshMargin: policy.refreshMargin, minimumBackgroundInterval: policy.wakeUpMinimumInterval,
                coalescingWindow: configuration.wakeUpCoalescingWindow, randomSeed: configuration.randomSeed),
            onDue: { refresh, ping in
                if !refresh.isEmpty { wakeUps.continuation.yield(.refreshDue(refresh)) }
                if !ping.isEmpty { wakeUps.continuation.yield(.flowPingDue(ping)) }
            })
        var seeder = SystemRandomNumberGenerator()
        self.flowLosses = FlowLossThrottle(
            backoff: policy.backoff, randomSeed: configuration.randomSeed ?? seeder.next())
        self.wake = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.sleepDetector = SleepDetector(asleep: configuration.timeAsleep())
        self.holdDown = HoldDown(policy.holdDown)
        self.networkDamping = FlapDamping(policy: policy.flapDamping)
        self.appDamping = FlapDamping(policy: policy.flapDamping)
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        self.dampedCounters = [
            .network: Counter(label: "netres.damped", dimensions: [("source", "network")], factory: factory),
            .app: Counter(label: "netres.damped", dimensions: [("source", "app")], factory: factory),
        ]
    }

    /// Everything from now on; any number of subscribers. Streams finish when ``run()`` returns.
    public nonisolated func events() -> AsyncStream<ResilienceEvent> { broadcast.subscribe() }

    /// Reports a lifecycle event of the host app.
    /// The rules engine (the one owner of app state, interruption and network availability)
    /// takes it into account when the event is decided, in order with every other trigger.
    public func handle(_ event: AppEvent) async {
        broadcast.yield(.app(event, state: event.nextState(from: reportedAppState)))
        enqueue(.app(event))
    }

    /// The app state once every reported app event is decided: the engine's state advanced by
    /// the app events damping holds and those still queued (derived, never stored).
    var reportedAppState: AppState {
        let held = heldAppEvents.reduce(rules.appState) { $1.nextState(from: $0) }
        return queue.reduce(held) { state, item in
            guard case .app(let event) = item.trigger else { return state }
            return event.nextState(from: state)
        }
    }

    /// Moves the app to `state`, reporting the events that lead there (`resumed` first when
    /// leaving `suspended`); nothing when it is already there (counting events not yet decided).
    public func setAppState(_ state: AppState) async {
        for event in Self.events(from: reportedAppState, to: state) { await handle(event) }
    }

    /// The system took the media path (e.g. a cellular call): active calls go on hold.
    public func beginInterruption() async { await handle(.interrupted) }
    /// The interruption is over: the calls it held resume.
    public func endInterruption() async { await handle(.interruptionEnded) }

    /// Starts tracking a service; its expiry arms its refresh and its flow-ping interval its pings in the wake-up scheduler.
    public func register(_ service: ClientService) async {
        services[service.id] = service
        await scheduler.setExpiry(service.expires, for: service.id)
        await scheduler.setFlowPingInterval(service.flowPingInterval, for: service.id)
        await servicesChangedWhileSuspended()
    }

    /// Stops tracking a service.
    public func remove(_ id: ServiceID) async {
        services.removeValue(forKey: id)
        latestSuccesses.forget(id)
        await scheduler.remove(id)
        await servicesChangedWhileSuspended()
    }

    /// Replaces a service's state: a new expiry re-arms its refresh, a new flow-ping interval its
    /// ping, a new call state is a `callStateChanged` trigger.
    public func update(_ service: ClientService) async {
        let old = services.updateValue(service, forKey: service.id)
        if old?.expires != service.expires { await scheduler.setExpiry(service.expires, for: service.id) }
        if old?.flowPingInterval != service.flowPingInterval {
            await scheduler.setFlowPingInterval(service.flowPingInterval, for: service.id)
        }
        if case .call = service.kind, let old, old.kind != service.kind {
            enqueue(.callStateChanged(service.id))
        }
    }

    /// The push token changed: registrations carry it in their Contact (RFC 8599).
    public func pushTokenChanged() { enqueue(.pushTokenChanged) }

    /// A snapshot of the current state.
    public func status() async -> ResilienceStatus {
        ResilienceStatus(
            path: rules.path, appState: rules.appState, isInterrupted: rules.isInterrupted, epoch: epoch,
            services: services.values.sorted { $0.id < $1.id }, actions: await executor.status(),
            nextWakeUp: await scheduler.nextWakeUp, queuedTriggers: queue.count, damping: dampingStatus())
    }

    func enqueue(_ trigger: Trigger, transition: PathTransition? = nil) {
        guard !isShuttingDown else { return }
        queue.append(QueuedTrigger(trigger: trigger, transition: transition))
        queueNeedsCoalescing = true
        wake.continuation.yield()
    }
}
