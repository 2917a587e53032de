public import ResilienceCore

/// The fields of one `netres run` log line for a ``ResilienceEvent`` that is not a transition
/// (transitions are `WatchRecord`s), and their one human rendering.
///
/// `netres run`'s human log, its JSON Lines and every `description` here use these fields, so a
/// test's failure message reads like the daemon's log. Invariant: nothing here can carry a
/// password; fields hold names, states and plugin errors.
public struct ResilienceEventLine: Hashable, Sendable {
    public var at: ContinuousClock.Instant
    /// `app`, `decision`, `flap`, `damping`, `hold` or `action`.
    public var kind = ""
    /// The trigger's name (`network.lost`, `app.entered-background`, ...) or `flap-coalesced`.
    public var event = ""
    public var epoch: UInt64?
    public var service: String?
    public var action: String?
    public var attempt: Int?
    public var outcome: String?
    public var error: String?
    /// A decision's actions, `"KIND SERVICE"` each.
    public var actions: [String] = []

    /// The line of a non-transition event; nil for a transition.
    public init?(_ event: ResilienceEvent) {
        switch event {
        case .transition: return nil
        case .app(let appEvent, let state):
            at = .now
            (kind, self.event, outcome) = ("app", Trigger.app(appEvent).name, state.rawValue)
        case .decision(let trigger, let epoch, let actions, let at):
            self.at = at
            (kind, self.event, self.epoch) = ("decision", trigger.name, epoch.rawValue)
            self.actions = actions.map { "\($0.kind) \($0.service)" }
        case .flapCoalesced(_, let restored):
            at = restored.at
            (kind, self.event) = ("flap", "flap-coalesced")
        case .damping(let damping):
            at = damping.at
            (kind, self.event) = ("damping", damping.trigger.name)
            let until = damping.until.map { " for \(DurationText.format($0 - damping.at))" } ?? ""
            outcome = (damping.released ? "released" : "held\(until)") + " (penalty \(Int(damping.penalty)))"
        case .suspensionHold(let hold):
            at = hold.at
            (kind, self.event, outcome) = ("hold", hold.trigger?.name ?? "services-changed", hold.summary)
        case .action(let action):
            at = action.at
            (kind, self.event, epoch) = ("action", action.action.trigger.name, action.epoch.rawValue)
            (service, self.action) = (action.action.service.rawValue, action.action.kind.rawValue)
            (attempt, outcome) = (action.attempt, action.outcome.label)
            error = action.outcome.pluginError.map { "\($0)" }
        }
    }

    /// `decision network.lost epoch=1 [nothing]`, `action network.restored epoch=1 register alice #1 -> succeeded`.
    public var words: String {
        var words = [kind, event]
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

extension ResilienceEvent: CustomStringConvertible {
    /// One line, the words of `netres run`'s log after the timestamp.
    public var description: String {
        if case .transition(let transition) = self { return transition.description }
        return ResilienceEventLine(self)?.words ?? ""
    }
}

extension ActionEvent: CustomStringConvertible {
    /// `action network.restored epoch=1 register alice #2 -> retrying (503 Service Unavailable)`.
    public var description: String { ResilienceEvent.action(self).description }
}

extension ActionOutcome {
    /// The plugin error of a failure or a retry; nil otherwise.
    public var pluginError: PluginError? {
        switch self {
        case .failed(let error), .retrying(_, let error): error
        default: nil
        }
    }
}
