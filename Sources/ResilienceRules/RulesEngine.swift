public import ResilienceCore

/// The pure rules engine: state in, ordered decisions out, time passed in, no I/O.
///
/// Invariants:
/// - Deterministic: the same engine value, trigger, services and instant give the same actions.
/// - No action brings up a service whose level in the current app state is `.none` (unless the
///   service's level row lists the trigger in `allowedOn`).
/// - Within one batch, `PlannedAction.after` orders registration before the same account's
///   subscriptions, calls and publishes, and teardown before unregister on shutdown.
/// - While the network is lost, only local actions are planned (`ActionKind.local`:
///   `drain-http`, `close-stale-transports`, plus ``localActions``); nothing that needs the
///   network until a `restored` or `changed` trigger.
/// - Only calls their plugin reports held by an interruption (`ClientService.heldByInterruption`)
///   are resumed, and only once the interruption is over (on `interruptionEnded`, or on the first
///   restore after it if the network was lost then). The plugin that owns a call owns why it is
///   held; the engine keeps no copy.
/// - Every action's `source` names the rule and the level row that allowed it.
/// - The engine is the ONE owner of the app state, the interruption and the network path (network
///   availability is derived from the path, never stored beside it): they change only as triggers
///   are decided (in decision order) and through ``setPath(_:)`` for the initial path; the runtime
///   reads them here and keeps no copy.
public struct RulesEngine: Sendable, Hashable {
    /// The policy in force.
    public var policy: Policy
    /// The app state, updated by `.app` triggers.
    public private(set) var appState: AppState
    /// The network path as of the last decided `.network` trigger (the transition's path when the
    /// runtime passes one, otherwise the last path with its status set by the trigger).
    public private(set) var path: NetworkPath
    /// Whether the network path is satisfied: derived from ``path``.
    public var networkAvailable: Bool { path.isSatisfied }
    /// Between `interrupted` and `interruptionEnded`: the system holds the media path.
    public private(set) var isInterrupted: Bool
    /// The network change decided while the app was suspended, when by policy nothing acted on it;
    /// the event that leaves `suspended` (`resumed`) plans its reactions too, so a client whose
    /// address changed while suspended re-registers at once on resume. A loss does not replace a
    /// change (the change still holds when the path returns); an address or interface change is
    /// not replaced by a later `restored` or route change.
    public private(set) var changeWhileSuspended: NetworkTrigger?
    /// Plugin actions that need no network (their plugins' `localActions`); with the built-in
    /// `ActionKind.local` ones, the only actions planned while the network is lost.
    public var localActions: Set<ActionKind>
    /// Accounts with a push token (RFC 8599 `pn-prid` known): the condition `push-available`.
    public var pushAccounts: Set<String> = []

    /// - Parameters:
    ///   - policy: the policy in force.
    ///   - appState: the app state at start.
    ///   - path: the network path at start.
    ///   - localActions: plugin actions that need no network (see ``localActions``).
    public init(
        policy: Policy = .default, appState: AppState = .foreground, path: NetworkPath,
        localActions: Set<ActionKind> = []
    ) {
        self.localActions = localActions
        self.policy = policy
        self.appState = appState
        self.path = path
        self.isInterrupted = false
    }

    /// An engine that knows only whether the network is available (a path with no detail; an
    /// unavailable one is `unsatisfied(.noInterface)`), e.g. to explain a policy.
    public init(
        policy: Policy = .default, appState: AppState = .foreground, networkAvailable: Bool = true,
        localActions: Set<ActionKind> = []
    ) {
        self.init(
            policy: policy, appState: appState,
            path: NetworkPath(status: networkAvailable ? .satisfied : .unsatisfied(.noInterface)),
            localActions: localActions)
    }

    /// States what the network is before any transition was decided (the source's initial
    /// path, which is never a trigger).
    public mutating func setPath(_ path: NetworkPath) {
        self.path = path
    }

    /// Decides the ordered actions for one trigger.
    /// - Parameters:
    ///   - trigger: what happened.
    ///   - services: every service the client runs, in their current state (call states included).
    ///   - path: the path a `.network` trigger's transition reported (ignored for other triggers).
    ///   - now: the instant of the trigger (used for expiry checks such as `resumed`).
    public mutating func decide(
        _ trigger: Trigger, services: [ClientService], path: NetworkPath? = nil, at now: ContinuousClock.Instant
    ) -> [PlannedAction] {
        let before = appState
        observe(trigger, services: services, path: path)

        var planned = plan(trigger, services: services, before: before, now: now)
        if before == .suspended, appState != .suspended, let missed = changeWhileSuspended {
            changeWhileSuspended = nil
            // What the change would have planned awake, for services running in this state;
            // calls stay with their own rules (only an interruption's end resumes them).
            for action in plan(.network(missed), services: services, before: before, now: now)
            where action.kind != .resumeCall
                && !planned.contains(where: { $0.kind == action.kind && $0.service == action.service })
                && services.contains(where: { $0.id == action.service && level(of: $0, in: appState) > .none })
            {
                planned.append(action)
            }
        }
        return Self.ordered(Self.subsumed(planned), services: services)
    }

    /// The actions the rules plan for `trigger` in the current app state (`before` is the state
    /// before it), each (kind, service) once, unordered.
    func plan(
        _ trigger: Trigger, services: [ClientService], before: AppState, now: ContinuousClock.Instant
    ) -> [PlannedAction] {
        var planned: [PlannedAction] = []
        let name = trigger.name
        for rule in policy.rules
        where rule.when.contains(appState) && rule.on.contains(where: { $0.matches(name: name) }) {
            for service in services where rule.selects(service.kind) {
                guard
                    rule.conditions.allSatisfy({
                        holds($0, for: service, among: services, trigger: trigger, before: before, now: now)
                    })
                else { continue }
                for kind in rule.actions where permits(kind, for: service, triggerName: name) {
                    guard !planned.contains(where: { $0.kind == kind && $0.service == service.id }) else { continue }
                    planned.append(
                        PlannedAction(kind: kind, service: service.id, trigger: trigger, source: source(rule, service)))
                }
            }
        }
        return planned
    }

    /// Updates the state the engine owns (app state, interruption, network path) for one trigger, without planning anything. ``decide(_:services:path:at:)``
    /// starts with it; a runtime whose decisions come from elsewhere calls it instead, so the
    /// engine stays the one owner of that state.
    ///
    /// A `.network` trigger takes `path` when given; without one, only the status follows the
    /// trigger (`lost(reason)` is `unsatisfied(reason)`, anything else `satisfied`).
    public mutating func observe(_ trigger: Trigger, services: [ClientService], path: NetworkPath? = nil) {
        if case .network(let change) = trigger, appState == .suspended {
            changeWhileSuspended = Self.stronger(changeWhileSuspended, change)
        }
        switch trigger {
        case .network(.lost(let reason)):
            self.path = path ?? self.path
            // The trigger decides availability; a given unsatisfied path keeps its own reason.
            if path == nil || self.path.isSatisfied { self.path.status = .unsatisfied(reason) }
        case .network:
            self.path = path ?? self.path
            self.path.status = .satisfied
        case .app(let event):
            appState = event.nextState(from: appState)
            if event == .interrupted { isInterrupted = true }
            if event == .interruptionEnded { isInterrupted = false }
        case .callStateChanged, .refreshDue, .pushTokenChanged, .push, .pushWindowEnded, .shutdown, .started, .flowLost,
            .flowPingDue:
            break
        }
    }

    /// The level a service runs at in an app state under the current policy.
    public func level(of service: ClientService, in state: AppState) -> ServiceLevel {
        policy.level(of: service.kind, in: state)
    }

    /// Whether the engine may plan `kind` for `service` on `trigger` in the current state.
    public func permits(_ kind: ActionKind, for service: ClientService, trigger: Trigger) -> Bool {
        permits(kind, for: service, triggerName: trigger.name)
    }

    private func permits(_ kind: ActionKind, for service: ClientService, triggerName: String) -> Bool {
        if kind.needsNetwork && !localActions.contains(kind) && !networkAvailable { return false }
        guard kind.bringsUp, level(of: service, in: appState) == .none else { return true }
        let row = policy.row(for: service.kind)
        return row?.allowedOn.contains { $0.matches(name: triggerName) } ?? false
    }

    private func holds(
        _ condition: RuleCondition, for service: ClientService, among services: [ClientService], trigger: Trigger,
        before: AppState, now: ContinuousClock.Instant
    ) -> Bool {
        switch condition {
        case .stale:
            guard let expires = service.expires else { return true }
            return expires <= now + policy.wakeUpMinimumInterval + policy.refreshMargin
        case .due:
            if case .refreshDue(let ids) = trigger { return ids.contains(service.id) }
            return false
        case .affected:
            switch trigger {
            case .refreshDue(let ids), .flowLost(let ids), .flowPingDue(let ids): return ids.contains(service.id)
            case .push(let push): return service.account == push.account
            case .pushWindowEnded(let account): return service.account == account
            default: return false
            }
        case .heldByInterruption:
            return !isInterrupted && service.heldByInterruption
        case .turnedOff:
            return level(of: service, in: before) > .none && level(of: service, in: appState) == .none
        case .turnedOn:
            return level(of: service, in: before) == .none && level(of: service, in: appState) > .none
        case .running:
            return level(of: service, in: before) > .none
        case .pushAvailable:
            return service.account.map(pushAccounts.contains) ?? false
        case .noCall:
            return !services.contains { other in
                guard case .call = other.kind else { return false }
                return other.account == service.account
            }
        }
    }

    private func source(_ rule: Rule, _ service: ClientService) -> String {
        guard let row = policy.row(for: service.kind) else { return "rule \(rule.name); no level row (full)" }
        return "rule \(rule.name); level \(row.selector.name) \(appState.rawValue)=\(row.level(in: appState).rawValue)"
    }
}
