/// An open set of action names. Core defines the ones the default policy uses; a plugin may add
/// its own (`static let myThing: Self = "vendor.my-thing"`) without editing Core.
public struct ActionKind: RawRepresentable, Hashable, Sendable, Codable, Comparable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (lhs: ActionKind, rhs: ActionKind) -> Bool { lhs.rawValue < rhs.rawValue }

    /// REGISTER with the current Contact (new binding).
    public static let register: Self = "register"
    /// Re-REGISTER before expiry with the same Contact.
    public static let refreshRegistration: Self = "refresh-registration"
    /// Remove the binding of a Contact that is no longer valid (old address).
    public static let unregisterOldContact: Self = "unregister-old-contact"
    /// Remove the registration (shutdown).
    public static let unregister: Self = "unregister"
    public static let subscribe: Self = "subscribe"
    public static let refreshSubscription: Self = "refresh-subscription"
    public static let unsubscribe: Self = "unsubscribe"
    public static let publishPresence: Self = "publish-presence"
    /// Hold an active call by re-INVITE (sendonly / inactive).
    public static let holdCall: Self = "hold-call"
    /// Resume a held call by re-INVITE.
    public static let resumeCall: Self = "resume-call"
    /// Re-INVITE a call with the current address, media direction unchanged.
    public static let reinviteCall: Self = "reinvite-call"
    /// Finish pending HTTP requests, then close; refuse new ones.
    public static let drainHTTP: Self = "drain-http"
    public static let openHTTP: Self = "open-http"
    /// Close transports bound to an address that vanished.
    public static let closeStaleTransports: Self = "close-stale-transports"
    /// Ping the flow under a service so it stays open (RFC 5626: CRLF over TCP, OPTIONS over
    /// UDP). Not a refresh: re-REGISTER/re-SUBSCRIBE before expiry are `refresh-*` actions.
    public static let pingFlow: Self = "ping-flow"
    /// Close the flow under a registration without removing its binding: the registrar, an
    /// RFC 8599 push proxy, keeps the binding and pushes when it needs the device. Local (it sends
    /// nothing) and optional (a stack without flows of its own has nothing to close).
    public static let releaseFlow: Self = "release-flow"

    /// Built-in actions that need no network path: they only touch local state (finish or refuse
    /// local HTTP requests, close sockets bound to a vanished address).
    ///
    /// These are the only built-in actions that run while the network is down: the rules engine
    /// plans them during a loss, and the executor starts and retries them while the path is
    /// unsatisfied and does not cancel them when a loss starts a new epoch. A plugin declares its
    /// own local actions with `ResiliencePlugin.localActions`.
    public static let local: Set<ActionKind> = [.drainHTTP, .closeStaleTransports, .releaseFlow]

    /// Whether this is a built-in local action (see ``local``); a plugin's own actions are local
    /// only when the plugin lists them in `localActions`.
    public var isLocal: Bool { Self.local.contains(self) }

    /// Steps the default policy plans around a new address's `register` that only a stack with
    /// transports or contact bindings of its own has anything to do for: closing transports bound
    /// to the vanished address, removing the old Contact's binding. An optional step that no
    /// plugin performs for a service is skipped (the executor reports it `skipped`, not failed)
    /// and the service's next action starts, so a plugin performs only the kinds it has a use
    /// for. Every other action no plugin performs fails permanently.
    public static let optionalSteps: Set<ActionKind> = [.closeStaleTransports, .unregisterOldContact, .releaseFlow]

    /// Whether this is an optional step (see ``optionalSteps``).
    public var isOptionalStep: Bool { Self.optionalSteps.contains(self) }

    /// The actions the default policy knows, in a stable order.
    public static let builtIn: [ActionKind] = [
        .register, .refreshRegistration, .unregisterOldContact, .unregister, .subscribe, .refreshSubscription,
        .unsubscribe, .publishPresence, .holdCall, .resumeCall, .reinviteCall, .drainHTTP, .openHTTP,
        .closeStaleTransports, .pingFlow, .releaseFlow,
    ]
}

/// One action the rules engine decided, for one service.
///
/// Invariant: `after` names services whose actions in the same decision batch must finish before
/// this one starts (registration before the same account's subscriptions, calls and publishes;
/// teardown before unregister on shutdown).
public struct PlannedAction: Hashable, Sendable {
    public var kind: ActionKind
    public var service: ServiceID
    public var trigger: Trigger
    /// Services whose actions in this batch go first.
    public var after: Set<ServiceID>
    /// The policy rule or table row that produced this action (for `policy explain` and logs).
    public var source: String

    public init(kind: ActionKind, service: ServiceID, trigger: Trigger, after: Set<ServiceID> = [], source: String) {
        self.kind = kind
        self.service = service
        self.trigger = trigger
        self.after = after
        self.source = source
    }
}

/// Counts network losses. Every trigger carries the epoch current when it was decided; a new
/// loss starts a new epoch and cancels running actions of older ones.
public struct NetworkEpoch: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let initial = NetworkEpoch(rawValue: 0)
    public var next: NetworkEpoch { NetworkEpoch(rawValue: rawValue + 1) }
    public static func < (lhs: NetworkEpoch, rhs: NetworkEpoch) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}
