public import ResilienceCore

/// One subscription dialog (RFC 6665) as seen by the subscriber.
struct SubscriptionState {
    var target: SubscriptionTarget
    var resource: String
    let callID = randomToken()
    let fromTag = randomToken()
    var cseq: UInt32 = 0
    /// Set by the first 2xx or NOTIFY; nil before the dialog exists.
    var toTag: String?
    var remoteTarget: String?
    var routeSet: [String] = []
    var expires: Int
    var status = SubscriptionStatus()

    init(target: SubscriptionTarget, resource: String) {
        self.target = target
        self.resource = resource
        self.expires = target.expires
    }

    var inDialog: Bool { toTag != nil }
}

/// What the subscriber knows about one subscription.
public struct SubscriptionStatus: Hashable, Sendable {
    public enum State: Hashable, Sendable {
        case none
        case pending
        case active
        /// Ended by the notifier. `resubscribe` is false for `rejected`, `noresource` and
        /// `invariant` (RFC 6665 §4.2.2), which the plugin reports as permanent failures.
        case terminated(reason: String, resubscribe: Bool)
    }

    public var state: State = .none
    /// Seconds granted by the last 2xx or NOTIFY.
    public var expires: Int?
    public var notifyCount = 0
    /// The body of the last NOTIFY (e.g. PIDF or reginfo XML).
    public var lastBody: [UInt8] = []
    /// A notifier's `retry-after` from a terminated NOTIFY, in seconds.
    public var retryAfter: Int?
}

/// Something the user agent learned without being asked.
public enum SIPEvent: Hashable, Sendable {
    case notify(service: ServiceID, status: SubscriptionStatus)
}

extension SubscriptionStatus.State {
    /// Parses a `Subscription-State` value (`active;expires=600`, `terminated;reason=rejected`).
    static func parse(_ value: String) -> (SubscriptionStatus.State, expires: Int?, retryAfter: Int?) {
        let word = value.prefix { $0 != ";" }.trimmingCharacters()
        let params = SIPParameters.parse(afterFirstSemicolon: value)
        let expires = params.seconds("expires")
        let retryAfter = params.seconds("retry-after")
        switch word {
        case "active": return (.active, expires, retryAfter)
        case "pending": return (.pending, expires, retryAfter)
        default:
            let reason = params["reason"]?.lowercased() ?? "unknown"
            let stop: Set<String> = ["rejected", "noresource", "invariant"]
            return (.terminated(reason: reason, resubscribe: !stop.contains(reason)), expires, retryAfter)
        }
    }
}

extension EventPackage {
    /// The `Accept` value for this package's NOTIFY bodies.
    var acceptedBody: String {
        switch self {
        case .presenceSelf, .presenceOthers: "application/pidf+xml"
        case .reg: "application/reginfo+xml"
        case .dialog: "application/dialog-info+xml"
        case .messageSummary: "application/simple-message-summary"
        case .ccsProfile, .featureStatus: "application/xml"
        }
    }
}
