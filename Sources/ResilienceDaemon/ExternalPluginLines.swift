import ResilienceCore
import ResilienceOutput

/// The daemon's messages on a control-socket session, one JSON object per line, each with a
/// `type` (the DocC article "External plugins" lists them). Rendered by the project's one JSON
/// writer, so every string is escaped.
enum ExternalPluginLines {
    static func welcome(plugin: String?, accepted: [ServiceID], refused: [(ServiceID, String)]) -> String {
        JSONObject([
            ("type", .string("welcome")), ("protocol", .int(Int64(ExternalPluginMessage.protocolVersion))),
            ("plugin", plugin.map(JSONValue.string) ?? .null),
            ("services", .array(accepted.map { .string($0.rawValue) })),
            (
                "refused",
                .array(
                    refused.map {
                        .object(JSONObject([("service", .string($0.0.rawValue)), ("reason", .string($0.1))]))
                    })
            ),
        ]).rendered
    }

    /// One action for the plugin to perform: its id, what, for which service, the trigger that
    /// decided it and the path before and after, the attempt and how long the plugin has.
    static func perform(
        id: UInt64, action: PlannedAction, context: PluginContext, previousPath: NetworkPath?
    ) -> String {
        let timeout = context.deadline - context.now
        return JSONObject([
            ("type", .string("perform")), ("id", .int(Int64(id))), ("action", .string(action.kind.rawValue)),
            ("service", .string(action.service.rawValue)), ("trigger", .string(action.trigger.name)),
            ("epoch", .int(Int64(context.epoch.rawValue))), ("attempt", .int(Int64(context.attempt))),
            ("timeout_ms", .int(Int64(timeout.nanosecondsValue / 1_000_000))),
            ("path", path(context.path)), ("previous_path", previousPath.map(path) ?? .null),
        ]).rendered
    }

    static func path(_ path: NetworkPath) -> JSONValue {
        .object(
            JSONObject([
                ("status", .string(path.statusWord)),
                ("reason", path.reason.map { .string($0.rawValue) } ?? .null),
                ("interface", path.primaryInterface.map { .string($0.name) } ?? .null),
                ("addresses", .array(path.addresses.map { .string($0.address) })),
            ]))
    }

    static func cancel(id: UInt64) -> String {
        JSONObject([("type", .string("cancel")), ("id", .int(Int64(id)))]).rendered
    }

    static func error(_ reason: String) -> String {
        JSONObject([("type", .string("error")), ("reason", .string(reason))]).rendered
    }

    static func reply(_ text: String) -> String {
        JSONObject([("type", .string("reply")), ("text", .string(text))]).rendered
    }

    static func dropped(_ count: Int) -> String {
        JSONObject([("type", .string("dropped")), ("count", .int(Int64(count)))]).rendered
    }

    /// An event line of the daemon's JSON log with `"type":"event"` put first.
    static func event(_ logLine: String) -> String? {
        guard logLine.hasPrefix("{\"") else { return nil }
        return "{\"type\":\"event\"," + logLine.dropFirst()
    }
}

extension NetworkPath {
    /// Why the path is down; nil while it is satisfied.
    var reason: LossReason? {
        if case .unsatisfied(let reason) = status { return reason }
        return nil
    }
}
