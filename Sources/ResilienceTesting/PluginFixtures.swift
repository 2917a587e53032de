public import Logging
public import ResilienceCore

extension PlannedAction {
    /// A planned action as the rules engine would hand it to a plugin, for calling `perform`
    /// directly: `source` is `"test"`, the trigger `network.restored` unless given.
    public static func fixture(
        _ kind: ActionKind, for service: ServiceID, trigger: Trigger = .network(.restored),
        after: Set<ServiceID> = []
    ) -> PlannedAction {
        PlannedAction(kind: kind, service: service, trigger: trigger, after: after, source: "test")
    }
}

extension PluginContext {
    /// A context as the executor lends it for one attempt: the deadline is `timeout` after the
    /// clock's `now`, the path satisfied on `eth0` (``ScriptedNetworkSource/satisfiedPath``)
    /// unless given, the epoch initial, the attempt the first.
    public static func fixture(
        path: NetworkPath = ScriptedNetworkSource.satisfiedPath, network: NetworkSnapshot = .empty,
        epoch: NetworkEpoch = .initial, attempt: Int = 1, timeout: Duration = .seconds(30),
        clock: any RuntimeClock = ContinuousClock(), logger: Logger = Logger(label: "netres.test")
    ) -> PluginContext {
        let now = clock.now
        return PluginContext(
            logger: logger, deadline: now + timeout, network: network, path: path, epoch: epoch, attempt: attempt,
            now: now, clock: clock)
    }
}

extension NetworkPath {
    /// An unsatisfied path: what a plugin sees after a loss.
    public static func lost(_ reason: LossReason = .noCarrier) -> NetworkPath {
        NetworkPath(status: .unsatisfied(reason))
    }
}
