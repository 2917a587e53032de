/// Stable identifier of one service instance, e.g. `"alice.registration"` or `"call-42"`.
public struct ServiceID: RawRepresentable, Hashable, Sendable, Codable, Comparable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
    public static func < (lhs: ServiceID, rhs: ServiceID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One thing a client keeps alive: a registration, a subscription, a call, a publish, an HTTP
/// session. Services of the same `account` are ordered (registration first).
public struct ClientService: Hashable, Sendable, Codable {
    public var id: ServiceID
    public var kind: ServiceKind
    /// The SIP account (or other grouping) this service belongs to; nil for account-less services.
    public var account: String?
    /// When the service's current registration or subscription expires, if it has one.
    public var expires: ContinuousClock.Instant?
    /// How often the flow under this service needs a ping (RFC 5626 §4.4.1), before the
    /// scheduler's jitter (each wait is 80–100 % of it); nil for none.
    public var flowPingInterval: Duration?
    /// For a call: this end holds it because the system took the media path (an interruption),
    /// as the plugin that owns the call reports it. The rules resume only such calls once the
    /// interruption is over (condition `held-by-interruption`); a call the user held stays held.
    public var heldByInterruption: Bool

    public init(
        id: ServiceID, kind: ServiceKind, account: String? = nil, expires: ContinuousClock.Instant? = nil,
        flowPingInterval: Duration? = nil, heldByInterruption: Bool = false
    ) {
        self.id = id
        self.kind = kind
        self.account = account
        self.expires = expires
        self.flowPingInterval = flowPingInterval
        self.heldByInterruption = heldByInterruption
    }
}

/// What a service is, with the attributes the policy keys on.
public enum ServiceKind: Hashable, Sendable, Codable {
    case registration
    case subscription(EventPackage)
    case call(CallDirection, CallState)
    case presencePublish
    case http

    /// The policy-file name of this kind's family: `registration`, `subscription`, `call`,
    /// `presence-publish`, `http`.
    public var family: String {
        switch self {
        case .registration: "registration"
        case .subscription: "subscription"
        case .call: "call"
        case .presencePublish: "presence-publish"
        case .http: "http"
        }
    }
}

/// SIP event packages a subscription can carry. Presence is split by target because the default
/// policy treats self-presence and others' presence differently in the background.
public enum EventPackage: String, Hashable, Sendable, Codable, CaseIterable {
    case presenceSelf = "presence-self"
    case presenceOthers = "presence-others"
    case reg
    case dialog
    case messageSummary = "message-summary"
    case ccsProfile = "ccs-profile"
    case featureStatus = "feature-status"

    /// The `Event:` header value.
    public var sipEvent: String {
        switch self {
        case .presenceSelf, .presenceOthers: "presence"
        default: rawValue
        }
    }
}

public enum CallDirection: String, Hashable, Sendable, Codable, CaseIterable {
    case outgoing
    case incoming
}

public enum CallState: String, Hashable, Sendable, Codable, CaseIterable {
    /// Outgoing call being set up (INVITE sent, no final answer yet).
    case progressing
    /// Incoming call alerting.
    case alerting
    case active
    /// Held by this side.
    case held
    /// Held by the remote party (music on hold may play).
    case remotelyHeld = "remotely-held"
}

/// How much of a service runs in an app state.
public enum ServiceLevel: String, Hashable, Sendable, Codable, CaseIterable, Comparable {
    case none
    case signalingOnly = "signaling-only"
    case full

    private var rank: Int {
        switch self {
        case .none: 0
        case .signalingOnly: 1
        case .full: 2
        }
    }
    public static func < (lhs: ServiceLevel, rhs: ServiceLevel) -> Bool { lhs.rank < rhs.rank }
}
