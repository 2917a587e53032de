public import ResilienceCore

/// The environment a hook script runs with: `NETRES_*` variables describing one transition or
/// one call event (`NETRES_EVENT=call`).
///
/// Invariant: every variable of both kinds is always present (empty when it does not apply), so
/// scripts can use them without testing for unset; words match `netres watch` (event, reason,
/// status). Call values from the wire (peer, reason) are escaped and cut (`LogText`); no
/// variable ever holds a credential.
public enum HookEnvironment {
    /// One call event as hooks see it: plain words, so this module needs no SIP types.
    public struct Call: Hashable, Sendable {
        public var id: String
        public var account: String
        public var peer: String
        public var state: String
        public var direction: String
        public var trigger: String
        public var reason: String
        /// How long the path was lost, for a recovery or an end by the outage.
        public var downtime: Duration?
        /// Call events of this state a flood had held back of the hooks before this one.
        public var heldBack: Int

        public init(
            id: String, account: String, peer: String, state: String, direction: String, trigger: String,
            reason: String, downtime: Duration? = nil, heldBack: Int = 0
        ) {
            self.downtime = downtime
            self.heldBack = heldBack
            self.id = id
            self.account = account
            self.peer = peer
            self.state = state
            self.direction = direction
            self.trigger = trigger
            self.reason = reason
        }
    }

    static let transitionNames = [
        "NETRES_REASON", "NETRES_CHANGE", "NETRES_STATUS", "NETRES_INTERFACE", "NETRES_IFINDEX", "NETRES_ADDRESSES",
        "NETRES_DOWNTIME_MS",
    ]
    static let callNames = [
        "NETRES_CALL_ID", "NETRES_ACCOUNT", "NETRES_PEER", "NETRES_CALL_STATE", "NETRES_CALL_DIRECTION",
        "NETRES_CALL_TRIGGER", "NETRES_CALL_REASON", "NETRES_CALL_HELD_BACK",
    ]

    /// NETRES_EVENT (`call`), NETRES_CALL_ID, NETRES_ACCOUNT, NETRES_PEER, NETRES_CALL_STATE,
    /// NETRES_CALL_DIRECTION, NETRES_CALL_TRIGGER, NETRES_CALL_REASON, NETRES_CALL_HELD_BACK (call
    /// events of this state held back of the hooks before this one), NETRES_DOWNTIME_MS (a
    /// recovery's or an outage end's) and NETRES_TIME; the other transition variables empty.
    public static func variables(
        ofCall call: Call, at instant: ContinuousClock.Instant = .now, clock: WallClock
    ) -> [String: String] {
        var variables = Dictionary(uniqueKeysWithValues: (transitionNames + pushNames).map { ($0, "") })
        let values = [
            call.id, call.account, LogText.escaped(call.peer, limit: 200), call.state, call.direction,
            call.trigger, LogText.escaped(call.reason, limit: 64), String(max(0, call.heldBack)),
        ]
        for (name, value) in zip(callNames, values) { variables[name] = LogText.escaped(value, limit: 200) }
        variables["NETRES_EVENT"] = "call"
        variables["NETRES_DOWNTIME_MS"] = call.downtime.map { String($0.nanosecondsValue / 1_000_000) } ?? ""
        variables["NETRES_TIME"] = clock.rfc3339(instant)
        return variables
    }

    /// NETRES_EVENT, NETRES_REASON, NETRES_CHANGE, NETRES_STATUS, NETRES_INTERFACE,
    /// NETRES_IFINDEX, NETRES_ADDRESSES, NETRES_DOWNTIME_MS and NETRES_TIME of `transition`.
    public static func variables(of transition: PathTransition, clock: WallClock) -> [String: String] {
        let path = transition.path
        var interface = path.primaryInterface ?? transition.previous?.primaryInterface
        var (event, reason, change, downtime) = ("", "", "", "")
        switch transition.kind {
        case .initial:
            event = "initial"
            if case .unsatisfied(let why) = path.status { reason = why.rawValue }
        case .lost(let why):
            (event, reason) = ("lost", why.rawValue)
            // The interface that was lost, not whatever is left.
            interface = transition.previous?.primaryInterface ?? interface
        case .restored(let duration):
            event = "restored"
            downtime = String(duration.nanosecondsValue / 1_000_000)
        case .changed(let what):
            (event, change) = ("changed", what.rawValue)
        }
        var variables = [
            "NETRES_EVENT": event,
            "NETRES_REASON": reason,
            "NETRES_CHANGE": change,
            "NETRES_STATUS": path.statusWord,
            "NETRES_INTERFACE": interface?.name ?? "",
            "NETRES_IFINDEX": interface.map { String($0.ifindex) } ?? "",
            "NETRES_ADDRESSES": path.addresses.map(\.description).joined(separator: " "),
            "NETRES_DOWNTIME_MS": downtime,
            "NETRES_TIME": clock.rfc3339(transition.at),
        ]
        for name in callNames + pushNames { variables[name] = "" }
        return variables
    }
}
