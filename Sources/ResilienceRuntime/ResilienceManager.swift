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
/// - Triggers (path transitions, app events, call-state changes, keep-alive wake-ups, flow
///   losses) are decided one at a time in arrival order, and their actions reach the
///   ``ActionExecutor`` in that order.
/// - `started` is decided exactly once, right after the initial path has been handed to the
///   executor, satisfied or not (the rules plan nothing that needs the network while it is down;
///   `network.restored` brings the services up later).
/// - Plugins' flow losses become `flow.lost` triggers through a ``FlowLossThrottle`` whose delays
///   run on the manager's clock; each plugin's `reports` stream is read once, by ``run()``,
///   and every report is applied in order (``PluginReport``).
/// - A `lost` followed by a `restored` before the `lost` was decided cancels out: neither is
///   decided, the epoch does not change, and ``ResilienceEvent/flapCoalesced(lost:restored:)`` says so.
/// - Every loss starts a new ``NetworkEpoch``; every decision carries the epoch current then.
/// - State-changing calls (`register`, `update`, `handle`) take effect at once for ``status()``;
///   their triggers are decided once ``run()`` runs.
/// - Flap damping (``FlapDamping``, configured by ``Policy/flapDamping``): every loss of the path
///   and every app-state change counts as a flap. While suppressed, a return of the path and
///   app-state changes are held, not decided (nothing is sent meanwhile: rules and executor still
///   see the path lost); when the penalty has decayed, the latest held return, and the events
///   leading from the decided app state to the current one, are decided once. A loss while a
///   return is held drops it. ``ResilienceEvent/damping(_:)``, ``status()`` and the counter
///   `netres.damped` (dimension `source`) show it.
/// - On graceful shutdown the manager stops deciding, submits `decide(.shutdown)` and waits at
///   most `Configuration.shutdownTimeout` (on its clock) for it, cancels whatever still runs,
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
        /// In the foreground, keep-alives due this close together share a wake-up.
        public var keepAliveCoalescingWindow: Duration
        /// Seed for backoff, flow-loss and keep-alive jitter (reproducible tests); nil for the
        /// system generator.
        public var randomSeed: UInt64?
        /// Where metrics go; nil for the bootstrapped `MetricsSystem`.
        public var metricsFactory: (any MetricsFactory)?
        /// The machine's total time suspended since boot, read whenever a trigger is decided: a
        /// jump of more than 5 s is a system sleep, reported as `app.resumed` (tests pass their own).
        public var timeAsleep: @Sendable () -> Duration

        public init(
            actionTimeout: Duration = .seconds(30), shutdownTimeout: Duration = .seconds(5),
            keepAliveCoalescingWindow: Duration = .seconds(10), randomSeed: UInt64? = nil,
            metricsFactory: (any MetricsFactory)? = nil,
            timeAsleep: @escaping @Sendable () -> Duration = SleepDetector.systemTimeAsleep,
            pluginShutdownTimeout: Duration = .milliseconds(500)
        ) {
            self.actionTimeout = actionTimeout
            self.shutdownTimeout = shutdownTimeout
            self.pluginShutdownTimeout = pluginShutdownTimeout
            self.keepAliveCoalescingWindow = keepAliveCoalescingWindow
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
    let scheduler: KeepAliveScheduler
    let keepAliveDue: (stream: AsyncStream<Trigger>, continuation: AsyncStream<Trigger>.Continuation)
    let wake: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation)
    let broadcast: Broadcast<ResilienceEvent>
    var rules: RulesEngine
    var services: [ServiceID: ClientService] = [:]
    var appState: AppState
    var isInterrupted = false
    var path = NetworkPath(status: .satisfied)
    var epoch = NetworkEpoch.initial
    var queue: [QueuedTrigger] = []
    var isShuttingDown = false
    var sleepDetector: SleepDetector
    var hasStarted = false
    var flowLosses: FlowLossThrottle
    var flowLossTimer = DeadlineTimer()
    var networkDamping: FlapDamping
    var appDamping: FlapDamping
    /// The latest return of the path that damping holds; nil when none is held.
    var heldNetwork: QueuedTrigger?
    /// True while damping holds app-state changes (the decided state lags ``appState``).
    var holdsAppChanges = false
    /// The app state and the network availability as last decided (damping may hold newer ones).
    var decidedAppState: AppState
    var decidedNetworkUp = true
    var dampingTimer = DeadlineTimer()
    /// `netres.damped` per source: triggers damping held.
    let dampedCounters: [DampingEvent.Source: Counter]

    /// - Parameters:
    ///   - source: the network monitor (or a `ScriptedNetworkSource` in tests).
    ///   - policy: backoff, keep-alive interval, refresh margin, and the rules' policy.
    ///   - plugins: run as services by the manager; actions go to the first that takes them.
    ///   - clock: every timer of the runtime runs on it.
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
        self.appState = appState
        self.rules = RulesEngine(policy: policy, appState: appState)
        let broadcast = Broadcast<ResilienceEvent>()
        self.broadcast = broadcast
        self.executor = ActionExecutor(
            plugins: plugins, clock: clock,
            configuration: ActionExecutor.Configuration(
                backoff: policy.backoff, actionTimeout: configuration.actionTimeout,
                randomSeed: configuration.randomSeed, metricsFactory: configuration.metricsFactory),
            logger: logger, onEvent: { broadcast.yield(.action($0)) })
        let keepAliveDue = AsyncStream<Trigger>.makeStream()
        self.keepAliveDue = keepAliveDue
        self.scheduler = KeepAliveScheduler(
            clock: clock,
            configuration: KeepAliveScheduler.Configuration(
                refreshMargin: policy.refreshMargin, minimumBackgroundInterval: policy.keepAliveMinimumInterval,
                coalescingWindow: configuration.keepAliveCoalescingWindow, randomSeed: configuration.randomSeed),
            onDue: { refresh, ping in
                if !refresh.isEmpty { keepAliveDue.continuation.yield(.keepAliveDue(refresh)) }
                if !ping.isEmpty { keepAliveDue.continuation.yield(.flowPingDue(ping)) }
            })
        var seeder = SystemRandomNumberGenerator()
        self.flowLosses = FlowLossThrottle(
            backoff: policy.backoff, randomSeed: configuration.randomSeed ?? seeder.next())
        self.wake = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.sleepDetector = SleepDetector(asleep: configuration.timeAsleep())
        self.networkDamping = FlapDamping(policy: policy.flapDamping)
        self.appDamping = FlapDamping(policy: policy.flapDamping)
        self.decidedAppState = appState
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        self.dampedCounters = [
            .network: Counter(label: "netres.damped", dimensions: [("source", "network")], factory: factory),
            .app: Counter(label: "netres.damped", dimensions: [("source", "app")], factory: factory),
        ]
    }

    /// Everything from now on; any number of subscribers. Streams finish when ``run()`` returns.
    public nonisolated func events() -> AsyncStream<ResilienceEvent> { broadcast.subscribe() }

    /// Reports a lifecycle event of the host app.
    public func handle(_ event: AppEvent) async {
        appState = event.nextState(from: appState)
        if event == .interrupted { isInterrupted = true }
        if event == .interruptionEnded { isInterrupted = false }
        broadcast.yield(.app(event, state: appState))
        await scheduler.setAppState(appState)
        enqueue(.app(event))
    }

    /// Moves the app to `state`, reporting the events that lead there (`resumed` first when
    /// leaving `suspended`); nothing when it is already there.
    public func setAppState(_ state: AppState) async {
        guard state != appState else { return }
        if appState == .suspended { await handle(.resumed) }
        switch state {
        case .foreground where appState != .foreground: await handle(.enteredForeground)
        case .background where appState != .background: await handle(.enteredBackground)
        case .suspended: await handle(.suspending)
        default: break
        }
    }

    /// The system took the media path (e.g. a cellular call): active calls go on hold.
    public func beginInterruption() async { await handle(.interrupted) }
    /// The interruption is over: the calls it held resume.
    public func endInterruption() async { await handle(.interruptionEnded) }

    /// Starts tracking a service; its expiry and keep-alive interval arm the keep-alive scheduler.
    public func register(_ service: ClientService) async {
        services[service.id] = service
        await scheduler.setExpiry(service.expires, for: service.id)
        await scheduler.setKeepAliveInterval(service.keepAliveInterval, for: service.id)
    }

    /// Stops tracking a service.
    public func remove(_ id: ServiceID) async {
        services.removeValue(forKey: id)
        await scheduler.remove(id)
    }

    /// Replaces a service's state: a new expiry re-arms its refresh, a new keep-alive interval its
    /// ping, a new call state is a `callStateChanged` trigger.
    public func update(_ service: ClientService) async {
        let old = services.updateValue(service, forKey: service.id)
        if old?.expires != service.expires { await scheduler.setExpiry(service.expires, for: service.id) }
        if old?.keepAliveInterval != service.keepAliveInterval {
            await scheduler.setKeepAliveInterval(service.keepAliveInterval, for: service.id)
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
            path: path, appState: appState, isInterrupted: isInterrupted, epoch: epoch,
            services: services.values.sorted { $0.id < $1.id }, actions: await executor.status(),
            nextKeepAlive: await scheduler.nextWakeUp, queuedTriggers: queue.count, damping: dampingStatus())
    }

    func enqueue(_ trigger: Trigger, transition: PathTransition? = nil, isRelease: Bool = false) {
        guard !isShuttingDown else { return }
        queue.append(QueuedTrigger(trigger: trigger, transition: transition, isRelease: isRelease))
        wake.continuation.yield()
    }
}
