public import Logging
public import ServiceLifecycle

/// A protocol-specific way to carry out actions (SIP re-registration, HTTP drain, call hold).
///
/// The rules engine decides *what* to do; a plugin only knows *how*. Invariants:
/// - A plugin performs one action at a time per service; the executor never overlaps two actions
///   of the same service.
/// - A plugin never reads the clock or netlink: the deadline, network snapshot and epoch arrive in
///   ``PluginContext``. It checks `Task.isCancelled` (or uses cancellable awaits): the executor
///   cancels actions of an older epoch when the network is lost again.
/// - A plugin does not retry: it throws ``PluginError`` and the executor owns retries, backoff,
///   ordering and timeouts.
/// - `run()` holds the plugin's background work (timers, sockets) and returns on graceful shutdown.
public protocol ResiliencePlugin: Service {
    /// Stable dotted identifier, e.g. `"sip"`: the executor puts it on every action's log lines
    /// (`plugin.id`, also in the ``PluginContext`` logger).
    var id: String { get }

    /// The one routing question: does this plugin carry out `kind` for `service`? The executor
    /// gives each planned action to the first plugin (in registration order) that answers yes;
    /// an action no plugin performs fails permanently (an ``ActionKind/optionalSteps`` kind is
    /// skipped instead), and the service's next action starts. The answer must not change while an
    /// action of that service runs, and must not block (no I/O).
    func performs(_ kind: ActionKind, for service: ServiceID) -> Bool

    /// The actions this plugin performs that need no network path (e.g. closing a local pool):
    /// the rules may plan them while the network is down, and the executor runs and retries
    /// them then, and does not cancel them when a loss starts a new epoch. The built-in local
    /// actions (``ActionKind/local``: drain-http, close-stale-transports) are local whatever a
    /// plugin says; by default a plugin adds none.
    var localActions: Set<ActionKind> { get }

    /// Performs one planned action and returns when it is complete.
    /// - Throws: ``PluginError`` for expected failures; `CancellationError` when cancelled.
    func perform(_ action: PlannedAction, context: PluginContext) async throws

    /// What the plugin tells the manager between actions: lost flows, services that changed
    /// (a granted expiry, a flow-ping interval), services that appeared or ended. The manager
    /// reads it once, from ``run()``, and applies every report in order (see ``PluginReport``).
    var reports: AsyncStream<PluginReport> { get }

    /// The path the manager decided on: the initial one, then after every network transition it
    /// decides (after the policy's hold-down), in decision order. Traffic a plugin sends outside
    /// actions (answers to a server's requests, their retransmissions) is held while the path is
    /// unsatisfied: nothing leaves the client until the path returns. Called on the manager;
    /// must return at once (no I/O). By default a plugin ignores it.
    func pathChanged(_ path: NetworkPath)
}

extension ResiliencePlugin {
    /// Plugins without background work wait for shutdown.
    public func run() async throws { try await gracefulShutdown() }

    /// Plugins declare no local actions of their own unless they say so.
    public var localActions: Set<ActionKind> { [] }

    /// Plugins that learn nothing between actions report nothing.
    public var reports: AsyncStream<PluginReport> { AsyncStream { $0.finish() } }

    /// Plugins that send nothing outside actions need not hear of the path.
    public func pathChanged(_ path: NetworkPath) {}
}

/// What the executor lends a plugin for one action.
public struct PluginContext: Sendable {
    /// Carries `action.kind`, `service.id`, `trigger`, `epoch` as metadata.
    public var logger: Logger
    /// The action must be finished by then; the executor cancels it afterwards.
    public var deadline: ContinuousClock.Instant
    /// The network after the trigger.
    public var network: NetworkSnapshot
    public var path: NetworkPath
    public var epoch: NetworkEpoch
    /// Which attempt this is (1 for the first try).
    public var attempt: Int
    /// When the attempt started, on the runtime's clock: the plugin's "now" for computing
    /// expiries (e.g. a registration's `expires` from the 200 OK's `Expires`) without a clock.
    public var now: ContinuousClock.Instant
    /// The runtime's clock, lent for the plugin's own timers (transaction retransmissions, drain
    /// deadlines): a test's `ManualClock` drives them without real time passing.
    public var clock: any RuntimeClock
    /// The most recent time the path was lost, on the runtime's clock: from the moment it went
    /// unsatisfied (the hold-down included) to its restore; nil while it has not been lost and
    /// restored since the manager started. A plugin compares it with what it keeps alive across
    /// losses (a call's survival budget) without reading netlink or the clock.
    public var lastPathLoss: Range<ContinuousClock.Instant>?
    /// The policy's `call-survival-budget` (`Policy.callSurvivalBudget`): a call whose path was
    /// lost longer is ended instead of recovered; zero keeps calls across any outage. The
    /// executor passes the manager's policy value with every action, so what an app sets in its
    /// policy is what a plugin applies; nil (hand-built contexts) leaves the plugin's default.
    public var callSurvivalBudget: Duration?

    /// Creates a context. The executor always passes its clock and `now` from it; when they are
    /// omitted (hand-built contexts in tests) they are `ContinuousClock()` and its `now`.
    public init(
        logger: Logger,
        deadline: ContinuousClock.Instant,
        network: NetworkSnapshot,
        path: NetworkPath,
        epoch: NetworkEpoch,
        attempt: Int = 1,
        now: ContinuousClock.Instant? = nil,
        clock: any RuntimeClock = ContinuousClock(),
        lastPathLoss: Range<ContinuousClock.Instant>? = nil,
        callSurvivalBudget: Duration? = nil
    ) {
        self.logger = logger
        self.deadline = deadline
        self.network = network
        self.path = path
        self.epoch = epoch
        self.attempt = attempt
        self.now = now ?? clock.now
        self.clock = clock
        self.lastPathLoss = lastPathLoss
        self.callSurvivalBudget = callSurvivalBudget
    }
}

/// An expected failure of a plugin action.
public struct PluginError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    /// False for failures retrying cannot fix (wrong password, 403, 404): reported once.
    public var isRetryable: Bool
    /// A server's `Retry-After`; wins over the executor's backoff.
    public var retryAfter: Duration?

    public init(_ message: String, isRetryable: Bool = true, retryAfter: Duration? = nil) {
        self.message = message
        self.isRetryable = isRetryable
        self.retryAfter = retryAfter
    }

    public var description: String { message }

    public static func permanent(_ message: String) -> PluginError { PluginError(message, isRetryable: false) }
}
