import ResilienceCore
import ResilienceRules

/// One service of every kind, short ids, one account; registrations and subscriptions expired.
enum Fixtures {
    static let t0 = ContinuousClock.now

    static let services: [ClientService] = [
        ClientService(id: "reg", kind: .registration, account: "a", expires: t0),
        ClientService(id: "self", kind: .subscription(.presenceSelf), account: "a", expires: t0),
        ClientService(id: "others", kind: .subscription(.presenceOthers), account: "a", expires: t0),
        ClientService(id: "regev", kind: .subscription(.reg), account: "a", expires: t0),
        ClientService(id: "dialog", kind: .subscription(.dialog), account: "a", expires: t0),
        ClientService(id: "mwi", kind: .subscription(.messageSummary), account: "a", expires: t0),
        ClientService(id: "ccs", kind: .subscription(.ccsProfile), account: "a", expires: t0),
        ClientService(id: "feat", kind: .subscription(.featureStatus), account: "a", expires: t0),
        ClientService(id: "out", kind: .call(.outgoing, .progressing), account: "a"),
        ClientService(id: "in", kind: .call(.incoming, .alerting), account: "a"),
        ClientService(id: "act", kind: .call(.outgoing, .active), account: "a"),
        ClientService(id: "held", kind: .call(.incoming, .held), account: "a"),
        ClientService(id: "rheld", kind: .call(.outgoing, .remotelyHeld), account: "a"),
        ClientService(id: "pub", kind: .presencePublish, account: "a"),
        ClientService(id: "http", kind: .http),
    ]

    /// Every trigger the policy names, by name, with the parameters the table uses.
    static let triggers: [String: Trigger] = [
        "network.lost": .network(.lost(.noCarrier)),
        "network.restored": .network(.restored),
        "network.changed.address": .network(.changed(.address)),
        "network.changed.default-route": .network(.changed(.defaultRoute)),
        "network.changed.interface-switched": .network(.changed(.interfaceSwitched)),
        "app.entered-background": .app(.enteredBackground),
        "app.entered-foreground": .app(.enteredForeground),
        "app.suspending": .app(.suspending),
        "app.resumed": .app(.resumed),
        "app.interrupted": .app(.interrupted),
        "app.interruption-ended": .app(.interruptionEnded),
        "call.state-changed": .callStateChanged("act"),
        "refresh.due": .refreshDue(
            services.filter { $0.kind.family != "call" && $0.kind != .http && $0.kind != .presencePublish }.map(\.id)),
        "push.token-changed": .pushTokenChanged,
        "push.received.call": .push(try! Push(account: "a", kind: .call)),
        "push.received.message": .push(try! Push(account: "a", kind: .message, payload: "m-1")),
        "push.received.refresh": .push(try! Push(account: "a", kind: .refresh)),
        "push.window-ended": .pushWindowEnded(account: "a"),
        "started": .started,
        "flow.lost": .flowLost(["reg", "mwi"]),
        "flow.ping-due": .flowPingDue(["reg"]),
        "shutdown": .shutdown,
    ]

    /// Runs one trigger on a fresh engine in `state` and renders the batch as
    /// `service:action<after1,after2` tokens. For `interruption-ended`, an `interrupted` runs
    /// first and the calls it held are reported held.
    static func run(_ triggerName: String, in state: AppState, policy: Policy = .default) -> String {
        let trigger = triggers[triggerName]!
        var engine = RulesEngine(policy: policy, appState: state, networkAvailable: trigger != .network(.restored))
        var current = services
        if trigger == .app(.interruptionEnded) { interrupt(&engine, &current) }
        return render(engine.decide(trigger, services: current, at: t0))
    }

    /// Feeds `interrupted` and reports the calls it held as `held` for the interruption, as a
    /// plugin would.
    static func interrupt(_ engine: inout RulesEngine, _ services: inout [ClientService]) {
        let held = Set(engine.decide(.app(.interrupted), services: services, at: t0).map(\.service))
        for i in services.indices where held.contains(services[i].id) {
            if case .call(let d, _) = services[i].kind {
                services[i].kind = .call(d, .held)
                services[i].heldByInterruption = true
            }
        }
    }

    static func render(_ batch: [PlannedAction]) -> String {
        batch.map { action in
            let after = action.after.isEmpty ? "" : "<" + action.after.sorted().map(\.rawValue).joined(separator: ",")
            return "\(action.service):\(action.kind)\(after)"
        }.joined(separator: " ")
    }
}
