package import ResilienceCore
package import ResilienceRuntime

/// Renders one ``ResilienceEvent`` as one log line of `netres run`.
///
/// Transitions render exactly as `netres watch` prints them (``WatchRecord``). Every other line
/// has the stable JSON keys ts, mono_ns, kind (app|decision|flap|damping|hold|action), event, epoch, service,
/// action, attempt, outcome, error, actions — null or empty when they do not apply.
/// Invariant: nothing here can carry a password; lines hold names, states and plugin errors.
package struct DaemonLogLine: Sendable {
    package let clock: WallClock
    package let json: Bool
    private var transitions: UInt64 = 0

    package init(clock: WallClock = WallClock(), json: Bool) {
        self.clock = clock
        self.json = json
    }

    package mutating func render(_ event: ResilienceEvent, at now: ContinuousClock.Instant = .now) -> String {
        guard var line = ResilienceEventLine(event) else {
            guard case .transition(let transition) = event else { return "" }
            transitions += 1
            let record = WatchRecord(transition, seq: transitions)
            return json ? record.json(clock: clock) : record.human(clock: clock)
        }
        if case .app = event { line.at = now }
        return json ? Self.json(line, clock) : clock.rfc3339(line.at) + " " + line.words
    }

    static func json(_ line: ResilienceEventLine, _ clock: WallClock) -> String {
        func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        return JSONObject([
            ("ts", .string(clock.rfc3339(line.at))), ("mono_ns", .int(clock.monotonicNanoseconds(line.at))),
            ("kind", .string(line.kind)), ("event", .string(line.event)),
            ("epoch", line.epoch.map { .int(Int64($0)) } ?? .null), ("service", text(line.service)),
            ("action", text(line.action)), ("attempt", line.attempt.map { .int(Int64($0)) } ?? .null),
            ("outcome", text(line.outcome)), ("error", text(line.error)),
            ("actions", .array(line.actions.map(JSONValue.string))),
        ]).rendered
    }
}
