public import ResilienceCore

extension ActionKind {
    /// Actions that bring a service up or keep it running; never planned for a service whose
    /// level is `none` (unless its level row allows the trigger).
    public static let bringUp: Set<ActionKind> = [
        .register, .refreshRegistration, .subscribe, .refreshSubscription, .publishPresence, .resumeCall,
        .reinviteCall, .openHTTP, .pingFlow,
    ]

    /// Pairs that undo each other; one rule set planning both for one service is a contradiction.
    public static let opposites: [(ActionKind, ActionKind)] = [
        (.register, .unregister), (.refreshRegistration, .unregister), (.subscribe, .unsubscribe),
        (.refreshSubscription, .unsubscribe), (.holdCall, .resumeCall), (.openHTTP, .drainHTTP),
    ]

    /// Whether this action brings a service up (see ``bringUp``).
    public var bringsUp: Bool { Self.bringUp.contains(self) }

    /// Whether this action needs a satisfied network path: every action but the built-in local
    /// ones (`ActionKind/isLocal`). A plugin's own local actions are known to the engine
    /// through ``RulesEngine/localActions``.
    public var needsNetwork: Bool { !isLocal }

    /// Plugin actions are namespaced with a dot (`vendor.thing`); built-ins never are.
    public var isPluginAction: Bool { rawValue.contains(".") }

    /// The service families a built-in action applies to; nil means any (plugin actions).
    public var families: Set<ServiceSelector.Family>? {
        switch self {
        case .register, .refreshRegistration, .unregisterOldContact, .unregister, .closeStaleTransports, .pingFlow,
            .releaseFlow:
            [.registration]
        case .subscribe, .refreshSubscription, .unsubscribe: [.subscription]
        case .publishPresence: [.presencePublish]
        case .holdCall, .resumeCall, .reinviteCall: [.call]
        case .drainHTTP, .openHTTP: [.http]
        default: nil
        }
    }

    /// Whether `a` and `b` undo each other.
    public static func areOpposite(_ a: ActionKind, _ b: ActionKind) -> Bool {
        opposites.contains { ($0.0 == a && $0.1 == b) || ($0.0 == b && $0.1 == a) }
    }
}
