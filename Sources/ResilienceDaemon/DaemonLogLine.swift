public import ResilienceCore
public import ResilienceRuntime

/// Renders one ``ResilienceEvent`` as one log line of `netres run`.
///
/// Transitions render exactly as `netres watch` prints them (``WatchRecord``). Every other line
/// has the stable JSON keys ts, mono_ns, kind (app|decision|flap|damping|action), event, epoch, service,
/// action, attempt, outcome, error, actions — null or empty when they do not apply.
/// Invariant: nothing here can carry a password; lines hold names, states and plugin errors.
public struct DaemonLogLine: Sendable {
    public let clock: WallClock
    public let json: Bool
    private var transitions: UInt64 = 0

    public init(clock: WallClock = WallClock(), json: Bool) {
        self.clock = clock
        self.json = json
    }

    public mutating func render(_ event: ResilienceEvent, at now: ContinuousClock.Instant = .now) -> String {
        var fields = Fields(at: now)
        switch event {
        case .transition(let transition):
            transitions += 1
            let record = WatchRecord(transition, seq: transitions)
            return json ? record.json(clock: clock) : record.human(clock: clock)
        case .app(let appEvent, let state):
            (fields.kind, fields.event, fields.outcome) = ("app", Trigger.app(appEvent).name, state.rawValue)
        case .decision(let trigger, let epoch, let actions, let at):
            fields = Fields(at: at)
            (fields.kind, fields.event, fields.epoch) = ("decision", trigger.name, epoch.rawValue)
            fields.actions = actions.map { "\($0.kind) \($0.service)" }
        case .flapCoalesced(_, let restored):
            fields = Fields(at: restored.at)
            (fields.kind, fields.event) = ("flap", "flap-coalesced")
        case .damping(let damping):
            fields = Fields(at: damping.at)
            (fields.kind, fields.event) = ("damping", damping.trigger.name)
            let until = damping.until.map { " for \(DurationText.format($0 - damping.at))" } ?? ""
            fields.outcome = (damping.released ? "released" : "held\(until)") + " (penalty \(Int(damping.penalty)))"
        case .action(let action):
            fields = Fields(at: action.at)
            (fields.kind, fields.event, fields.epoch) = ("action", action.action.trigger.name, action.epoch.rawValue)
            (fields.service, fields.action) = (action.action.service.rawValue, action.action.kind.rawValue)
            (fields.attempt, fields.outcome) = (action.attempt, action.outcome.label)
            switch action.outcome {
            case .failed(let error), .retrying(_, let error): fields.error = "\(error)"
            default: break
            }
        }
        return json ? fields.json(clock) : fields.human(clock)
    }

    struct Fields {
        var at: ContinuousClock.Instant
        var kind = ""
        var event = ""
        var epoch: UInt64?
        var service: String?
        var action: String?
        var attempt: Int?
        var outcome: String?
        var error: String?
        var actions: [String] = []

        func json(_ clock: WallClock) -> String {
            func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
            return JSONObject([
                ("ts", .string(clock.rfc3339(at))), ("mono_ns", .int(clock.monotonicNanoseconds(at))),
                ("kind", .string(kind)), ("event", .string(event)), ("epoch", epoch.map { .int(Int64($0)) } ?? .null),
                ("service", text(service)), ("action", text(action)),
                ("attempt", attempt.map { .int(Int64($0)) } ?? .null), ("outcome", text(outcome)),
                ("error", text(error)), ("actions", .array(actions.map(JSONValue.string))),
            ]).rendered
        }

        func human(_ clock: WallClock) -> String {
            var words = [clock.rfc3339(at), kind, event]
            if let epoch { words.append("epoch=\(epoch)") }
            if let action, let service { words.append("\(action) \(service)") }
            if let attempt { words.append("#\(attempt)") }
            if let outcome { words.append("-> \(outcome)") }
            if let error { words.append("(\(error))") }
            if kind == "decision" {
                words.append(actions.isEmpty ? "[nothing]" : "[" + actions.joined(separator: ", ") + "]")
            }
            return words.joined(separator: " ")
        }
    }
}
