public import ResilienceCore

/// The environment a hook script runs with: `NETRES_*` variables describing one transition.
///
/// Invariant: every variable is always present (empty when it does not apply), so scripts can
/// use them without testing for unset; words match `netres watch` (event, reason, status).
public enum HookEnvironment {
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
        return [
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
    }
}
