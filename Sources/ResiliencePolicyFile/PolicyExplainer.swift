public import ResilienceCore
public import ResilienceRules

/// What a policy does for one trigger in one app state, service by service (`netres policy explain`).
public struct PolicyExplanation: Hashable, Sendable, Encodable {
    /// One planned action, with its position in the whole batch.
    public struct Step: Hashable, Sendable, Encodable {
        public var order: Int
        public var action: String
        public var after: [String]
        public var source: String
    }

    /// One service: its level in the state after the trigger, the row that set it, its actions.
    public struct Service: Hashable, Sendable, Encodable {
        public var id: String
        public var kind: String
        public var account: String?
        public var level: String
        public var row: String?
        public var note: String?
        public var actions: [Step]
    }

    public var state: String
    public var trigger: String
    public var stateAfter: String
    /// Steps run before the explained trigger (e.g. `app.interrupted` before `interruption-ended`).
    public var setup: [String]
    public var services: [Service]
}

/// Builds ``PolicyExplanation``s from a policy, an app state and a trigger name.
///
/// Invariant: pure and deterministic; the same inputs give the same explanation.
public enum PolicyExplainer {
    /// The account every SIP service of the representative set belongs to.
    public static let account = "alice"

    /// One service of each kind (registration, each subscription package, a call in each state,
    /// presence publish, HTTP), already expired so refresh rules show; ids are their kind names.
    public static func representativeServices(expiringAt instant: ContinuousClock.Instant) -> [ClientService] {
        var kinds: [ServiceKind] = [.registration] + EventPackage.allCases.map { .subscription($0) }
        kinds += [
            .call(.outgoing, .progressing), .call(.incoming, .alerting), .call(.outgoing, .active),
            .call(.incoming, .held), .call(.outgoing, .remotelyHeld), .presencePublish, .http,
        ]
        return kinds.map { kind in
            let name = ServiceSelector(exactly: kind).name
            switch kind {
            case .http: return ClientService(id: ServiceID(name), kind: kind)
            case .registration, .subscription:
                return ClientService(id: ServiceID(name), kind: kind, account: account, expires: instant)
            default: return ClientService(id: ServiceID(name), kind: kind, account: account)
            }
        }
    }

    /// The trigger a policy name stands for; nil for an unknown name. Prefixes pick a
    /// representative (`network.changed` is an address change). Triggers that list services
    /// (`refresh.due`, `flow.lost`, `flow.ping-due`) list every registration and subscription.
    public static func trigger(named name: String, services: [ClientService]) -> Trigger? {
        if name.hasPrefix("network.changed") {
            let change = name == "network.changed" ? "address" : String(name.dropFirst("network.changed.".count))
            return PathChange(rawValue: change).map { .network(.changed($0)) }
        }
        if name.hasPrefix("app.") {
            return AppEvent.allCases.first { "app.\($0.policyName)" == name }.map { .app($0) }
        }
        let firstCall = services.first { if case .call = $0.kind { true } else { false } }
        let sessions = services.filter { $0.kind == .registration || $0.kind.family == "subscription" }.map(\.id)
        switch name {
        case "network.lost": return .network(.lost(.noCarrier))
        case "network.restored": return .network(.restored)
        case "call.state-changed": return firstCall.map { .callStateChanged($0.id) } ?? .callStateChanged("call")
        case "refresh.due": return .refreshDue(sessions)
        case "flow.lost": return .flowLost(sessions)
        case "flow.ping-due": return .flowPingDue(sessions)
        case "started": return .started
        case "push.token-changed": return .pushTokenChanged
        case "push", "push.received", "push.received.call": return try? .push(Push(account: account, kind: .call))
        case "push.received.message": return try? .push(Push(account: account, kind: .message))
        case "push.received.refresh": return try? .push(Push(account: account, kind: .refresh))
        case "push.window-ended": return .pushWindowEnded(account: account)
        case "shutdown": return .shutdown
        default: return nil
        }
    }

    /// Explains `trigger` arriving in `state`; for `interruption-ended`, an `interrupted` runs first
    /// and the calls it held are shown as held. `pushToken`: whether the services' accounts have a
    /// push token (RFC 8599), which decides whether suspended is asleep.
    public static func explain(
        policy: Policy, state: AppState, trigger: Trigger, services original: [ClientService],
        at now: ContinuousClock.Instant, pushToken: Bool = true
    ) -> PolicyExplanation {
        var engine = RulesEngine(policy: policy, appState: state, networkAvailable: trigger != .network(.restored))
        if pushToken { engine.pushAccounts = Set(original.compactMap(\.account)) }
        var services = original
        var setup: [String] = []
        if trigger == .app(.interruptionEnded) {
            let holds = engine.decide(.app(.interrupted), services: services, at: now).filter { $0.kind == .holdCall }
            for index in services.indices where holds.contains(where: { $0.service == services[index].id }) {
                if case .call(let direction, _) = services[index].kind {
                    services[index].kind = .call(direction, .held)
                    services[index].heldByInterruption = true
                }
            }
            setup.append("app.interrupted held: " + holds.map(\.service.rawValue).joined(separator: ", "))
        }
        let batch = engine.decide(trigger, services: services, at: now)
        let rows = services.map { service in
            let row = policy.row(for: service.kind)
            let steps = batch.enumerated().filter { $0.element.service == service.id }.map { index, action in
                PolicyExplanation.Step(
                    order: index + 1, action: action.kind.rawValue, after: action.after.sorted().map(\.rawValue),
                    source: action.source)
            }
            return PolicyExplanation.Service(
                id: service.id.rawValue, kind: ServiceSelector(exactly: service.kind).name, account: service.account,
                level: engine.level(of: service, in: engine.appState).rawValue, row: row?.selector.name,
                note: row?.note, actions: steps)
        }
        return PolicyExplanation(
            state: state.rawValue, trigger: trigger.name, stateAfter: engine.appState.rawValue, setup: setup,
            services: rows)
    }
}
