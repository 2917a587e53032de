import ResilienceCore
import ResilienceOutput
import ResilienceRuntime
import SIPPlugin

/// The last outcome of every service, from the manager's action events.
actor OutcomeBook {
    private var last: [ServiceID: ActionEvent] = [:]

    func record(_ event: ActionEvent) { last[event.action.service] = event }
    func lastEvent(_ id: ServiceID) -> ActionEvent? { last[id] }
}

/// What `netres ctl status` shows: path, app state, epoch, each service with its last outcome and
/// each account's registration and push availability.
///
/// Invariant: built from names, states and outcomes only; it holds no password and no push token.
public struct StatusReport: Sendable {
    public var json: String
    public var human: String
}

extension Daemon {
    public func statusReport() async -> StatusReport {
        let status = await manager.status()
        let path = status.path
        var lines = [
            "path: \(path.isSatisfied ? "satisfied" : "unsatisfied")"
                + (path.primaryInterface.map { " via \($0.name)" } ?? "")
                + (path.addresses.isEmpty ? "" : " [" + path.addresses.map(\.description).joined(separator: " ") + "]"),
            "app-state: \(status.appState.rawValue)\(status.isInterrupted ? " (interrupted)" : "")",
            "epoch: \(status.epoch.rawValue)",
            "damping: " + Self.dampingLine(status.damping, now: .now),
        ]
        var services: [JSONValue] = []
        for service in status.services {
            let last = await book.lastEvent(service.id)
            let busy = status.actions[service.id]?.running != nil
            lines.append(
                "service \(service.id): "
                    + (last.map { "\($0.action.kind) -> \($0.outcome.label)" } ?? "no action yet")
                    + (busy ? " (running)" : ""))
            services.append(
                .object(
                    JSONObject([
                        ("id", .string(service.id.rawValue)), ("kind", .string(service.kind.family)),
                        ("account", service.account.map(JSONValue.string) ?? .null),
                        ("last_action", last.map { .string($0.action.kind.rawValue) } ?? .null),
                        ("last_outcome", last.map { .string($0.outcome.label) } ?? .null),
                        ("running", .bool(busy)),
                    ])))
        }
        var accounts: [JSONValue] = []
        for account in plugin.accounts {
            let contact = await plugin.registrationStatus(of: account.name)?.contact
            let push = await plugin.isPushAvailable(for: account.name) ?? false
            lines.append(
                "account \(account.name): " + (contact.map { "registered \($0)" } ?? "not registered")
                    + (push ? "; push available" : "; push service not available"))
            accounts.append(
                .object(
                    JSONObject([
                        ("name", .string(account.name)), ("registered", .bool(contact != nil)),
                        ("contact", contact.map(JSONValue.string) ?? .null), ("push_available", .bool(push)),
                    ])))
        }
        let json = JSONObject([
            (
                "path",
                .object(
                    JSONObject([
                        ("status", .string(path.isSatisfied ? "satisfied" : "unsatisfied")),
                        ("interface", path.primaryInterface.map { .string($0.name) } ?? .null),
                        ("addresses", .array(path.addresses.map { .string($0.description) })),
                    ]))
            ),
            ("app_state", .string(status.appState.rawValue)), ("interrupted", .bool(status.isInterrupted)),
            ("epoch", .int(Int64(status.epoch.rawValue))), ("services", .array(services)),
            ("accounts", .array(accounts)),
            (
                "damping",
                .object(
                    JSONObject([
                        ("network_penalty", .int(Int64(status.damping.networkPenalty))),
                        ("network_held", .bool(status.damping.networkHeldUntil != nil)),
                        ("network_flaps", .int(Int64(status.damping.networkFlaps))),
                        ("app_penalty", .int(Int64(status.damping.appPenalty))),
                        ("app_held", .bool(status.damping.appHeldUntil != nil)),
                        ("app_changes", .int(Int64(status.damping.appChanges))),
                    ]))
            ),
        ])
        return StatusReport(json: json.rendered, human: lines.joined(separator: "\n"))
    }

    /// `network penalty 3000 (holding the return for 12s), 12 flaps; app penalty 0, 1 change`.
    static func dampingLine(_ damping: DampingStatus, now: ContinuousClock.Instant) -> String {
        func held(_ until: ContinuousClock.Instant?, _ what: String) -> String {
            until.map { " (holding \(what) for \(DurationText.format(max($0 - now, .zero))))" } ?? ""
        }
        return "network penalty \(Int(damping.networkPenalty))\(held(damping.networkHeldUntil, "the return")), "
            + "\(damping.networkFlaps) flaps; app penalty \(Int(damping.appPenalty))"
            + "\(held(damping.appHeldUntil, "state changes")), \(damping.appChanges) changes"
    }
}
