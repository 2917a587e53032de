public import ResilienceCore

/// One row of the service-level table: how much of the selected services runs in each app state.
///
/// Invariant: `suspended` defaults to `background` (a suspended app keeps its background sockets
/// but runs nothing). `allowedOn` lists triggers that may still act on the service while its level
/// is `.none` (the seed's "presence publish: none, but sent when the call state changes").
public struct ServiceLevelRow: Hashable, Sendable {
    public var selector: ServiceSelector
    public var foreground: ServiceLevel
    public var background: ServiceLevel
    public var suspended: ServiceLevel
    public var allowedOn: [TriggerPattern]
    /// Free text shown by `netres policy explain` (the seed's notes column).
    public var note: String?

    public init(
        _ selector: ServiceSelector, foreground: ServiceLevel, background: ServiceLevel,
        suspended: ServiceLevel? = nil, allowedOn: [TriggerPattern] = [], note: String? = nil
    ) {
        self.selector = selector
        self.foreground = foreground
        self.background = background
        self.suspended = suspended ?? background
        self.allowedOn = allowedOn
        self.note = note
    }

    public func level(in state: AppState) -> ServiceLevel {
        switch state {
        case .foreground: foreground
        case .background: background
        case .suspended: suspended
        }
    }
}

/// A trigger name or prefix in a policy file: `network.changed` matches every
/// `network.changed.*`; `network` matches every network trigger; `flow` matches `flow.lost` and
/// `flow.ping-due`; `push.received` matches a push of every kind.
public struct TriggerPattern: Hashable, Sendable, CustomStringConvertible {
    public var name: String

    /// Nil when no trigger has this name or prefix.
    public init?(_ name: String) {
        guard Self.allNames.contains(name) else { return nil }
        self.name = name
    }

    public func matches(_ trigger: Trigger) -> Bool {
        trigger.name == name || trigger.name.hasPrefix(name + ".")
    }

    public var description: String { name }

    /// Every concrete trigger name, in a stable order.
    public static let concreteNames: [String] =
        ["network.lost", "network.restored"] + PathChange.allCases.map { "network.changed.\($0.rawValue)" }
        + AppEvent.allCases.map { "app.\($0.policyName)" }
        + ["call.state-changed", "refresh.due", "push.token-changed"]
        + PushKind.allCases.map { "push.received.\($0.rawValue)" } + ["push.window-ended"]
        + ["started", "flow.lost", "flow.ping-due", "shutdown"]

    /// Concrete names plus the prefixes `network`, `network.changed`, `app`, `flow`, `push`,
    /// `push.received`.
    public static let allNames: [String] =
        concreteNames + ["network", "network.changed", "app", "flow", "push", "push.received"]
}

/// Extra conditions a rule can require of a service (`if:` in a policy file).
public enum RuleCondition: String, Hashable, Sendable, CaseIterable {
    /// Its registration or subscription expired, expires within the minimum wake-up interval plus the
    /// refresh margin, or has no known expiry.
    case stale
    /// The refresh wake-up (`refresh.due`) listed it.
    case due
    /// The trigger is about it: `refresh.due`, `flow.lost` or `flow.ping-due` names this service,
    /// or a push (`push.received.*`, `push.window-ended`) names its account.
    case affected
    /// A call its plugin reports held by an interruption (`ClientService.heldByInterruption`),
    /// once that interruption has ended.
    case heldByInterruption = "held-by-interruption"
    /// Its level went from above `none` to `none` with this trigger's app-state change.
    case turnedOff = "turned-off"
    /// Its level went from `none` to above `none` with this trigger's app-state change.
    case turnedOn = "turned-on"
    /// Its level in the state before the trigger is above `none`.
    case running
    /// Its account has a push token (RFC 8599): the registrar can wake it, so it may sleep.
    case pushAvailable = "push-available"
    /// Its account has no call (a woken account with a call stays awake for it).
    case noCall = "no-call"
}

/// An event-condition-action rule: `on` a trigger, `when` the app is in one of the states (after
/// the trigger), `for` the selected services that meet every condition in `if`, `do` the actions
/// in order.
///
/// Invariant: actions that bring a service up are dropped by the engine when the service's level
/// in the state is `none` (unless its row allows the trigger), whatever the rule says.
public struct Rule: Hashable, Sendable {
    public var name: String
    public var on: [TriggerPattern]
    public var when: Set<AppState>
    public var selectors: [ServiceSelector]
    public var conditions: [RuleCondition]
    public var actions: [ActionKind]

    public init(
        _ name: String, on: [TriggerPattern], when: Set<AppState> = Set(AppState.allCases),
        for selectors: [ServiceSelector], if conditions: [RuleCondition] = [], do actions: [ActionKind]
    ) {
        self.name = name
        self.on = on
        self.when = when
        self.selectors = selectors
        self.conditions = conditions
        self.actions = actions
    }

    public func matches(_ trigger: Trigger) -> Bool { on.contains { $0.matches(trigger) } }
    public func selects(_ kind: ServiceKind) -> Bool { selectors.contains { $0.matches(kind) } }
}

extension TriggerPattern {
    /// A known name; traps on a typo, so only for literals in code.
    public static func named(_ name: String) -> TriggerPattern {
        guard let p = TriggerPattern(name) else { preconditionFailure("unknown trigger name \(name)") }
        return p
    }
}
