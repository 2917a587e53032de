/// What the rules engine reacts to.
public enum Trigger: Hashable, Sendable {
    case network(NetworkTrigger)
    case app(AppEvent)
    /// A call's state changed (the service carries the new state).
    case callStateChanged(ServiceID)
    /// The wake-up scheduler's coalesced refresh wake-up; the listed services are due for refresh (re-REGISTER, re-SUBSCRIBE before expiry).
    case refreshDue([ServiceID])
    case pushTokenChanged
    /// A push notification for an account arrived (RFC 8599): by default it registers the
    /// account's registration at once, in every app state, and opens a wake window.
    case push(Push)
    /// The wake window a push opened for this account ran out while the app is suspended: the
    /// account may go back to sleep (no flow, no refresh, no ping).
    case pushWindowEnded(account: String)
    /// Decided once when the manager starts, right after the first path is known: brings the
    /// services up (what needs the network waits for `network.restored` when the path is down).
    case started
    /// A plugin saw the flow under these services fail between actions: the server closed it, a
    /// flow ping went unanswered, the server's port was unreachable. Their server-side state
    /// (bindings, subscriptions) may be gone.
    case flowLost([ServiceID])
    /// The scheduler's coalesced wake-up for flow pings (RFC 5626); the listed
    /// services' flows are due for one. Distinct from `refreshDue`, which refreshes before expiry.
    case flowPingDue([ServiceID])
    /// Graceful shutdown: tear down in order.
    case shutdown

    /// The policy-file name of the trigger, e.g. `network.lost`, `app.entered-background`.
    public var name: String {
        switch self {
        case .network(let n): "network.\(n.name)"
        case .app(let e): "app.\(e.policyName)"
        case .callStateChanged: "call.state-changed"
        case .refreshDue: "refresh.due"
        case .pushTokenChanged: "push.token-changed"
        case .push(let push): "push.received.\(push.kind.rawValue)"
        case .pushWindowEnded: "push.window-ended"
        case .started: "started"
        case .flowLost: "flow.lost"
        case .flowPingDue: "flow.ping-due"
        case .shutdown: "shutdown"
        }
    }
}

/// The network side of a trigger, from a ``PathTransition``.
public enum NetworkTrigger: Hashable, Sendable {
    case lost(LossReason)
    case restored
    case changed(PathChange)

    public var name: String {
        switch self {
        case .lost: "lost"
        case .restored: "restored"
        case .changed(let c): "changed.\(c.rawValue)"
        }
    }

    /// The trigger for a transition; nil for `.initial`, which is never a change.
    public init?(_ transition: PathTransition) {
        switch transition.kind {
        case .initial: return nil
        case .lost(let r): self = .lost(r)
        case .restored: self = .restored
        case .changed(let c): self = .changed(c)
        }
    }
}

extension AppEvent {
    /// Kebab-case name used in policy files: `entered-background`, `interruption-ended`.
    public var policyName: String {
        var out = ""
        for ch in rawValue {
            if ch.isUppercase {
                out += "-" + ch.lowercased()
            } else {
                out.append(ch)
            }
        }
        return out
    }
}
