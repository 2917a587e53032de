public import ResilienceCore

/// One subscription (RFC 6665) as seen by the subscriber: what it asks for and what it knows.
/// Its dialog (Call-ID, tags, CSeq, target, route set) lives in the agent's ``DialogTable``
/// under ``dialogID``, so NOTIFYs are matched there and calls can share the table.
struct SubscriptionState {
    /// How long to wait before the next SUBSCRIBE after the notifier ended the subscription.
    enum ResubscribeWait: Hashable {
        /// The executor's backoff (unknown reason, garbled state, probation/giveup without a time).
        case backoff
        /// The notifier's `retry-after`, clamped (probation, giveup).
        case seconds(Int)
    }

    var target: SubscriptionTarget
    var resource: String
    /// The dialog's ID as last known; its remote tag is set once the notifier answered.
    var dialogID: Dialog.ID
    var expires: Int
    var status = SubscriptionStatus()
    /// Set when the notifier may have lost the subscription (its flow was lost): the next
    /// SUBSCRIBE opens a new dialog instead of refreshing one nobody confirms. Its loss was
    /// reported: until that SUBSCRIBE, no further loss reports it again (`servicesOnFlow`).
    var needsRecreation = false
    /// Set by a terminating NOTIFY that asks to wait; the next SUBSCRIBE waits once.
    var resubscribeWait: ResubscribeWait?

    init(target: SubscriptionTarget, resource: String, dialogID: Dialog.ID) {
        self.target = target
        self.resource = resource
        self.dialogID = dialogID
        self.expires = target.expires
    }

    var inDialog: Bool { dialogID.remoteTag != nil }
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
    /// A state word other than `active`, `pending` or `terminated` (garbled) counts as terminated
    /// with reason `garbled`. `expires` and `retry-after` are clamped as every wire number is
    /// (``SIPWireNumber``); a number that is not one is ignored.
    static func parse(_ value: String) -> (SubscriptionStatus.State, expires: Int?, retryAfter: Int?) {
        let word = value.prefix { $0 != ";" }.trimmingCharacters()
        let params = SIPParameters.parse(afterFirstSemicolon: value)
        let expires = params.seconds("expires")
        let retryAfter = params.seconds("retry-after")
        switch word {
        case "active": return (.active, expires, retryAfter)
        case "pending": return (.pending, expires, retryAfter)
        case "terminated":
            let reason = params["reason"]?.lowercased() ?? "unknown"
            let stop: Set<String> = ["rejected", "noresource", "invariant"]
            return (.terminated(reason: reason, resubscribe: !stop.contains(reason)), expires, retryAfter)
        default: return (.terminated(reason: "garbled", resubscribe: true), expires, retryAfter)
        }
    }

    /// What RFC 6665 §4.1.3 asks of the subscriber after this terminated state: nil for
    /// "do not resubscribe" (`rejected`, `noresource`, `invariant`), `.some(nil)` for "at once"
    /// (`deactivated`, `timeout`), otherwise the wait (`retry-after` for `probation`/`giveup`,
    /// backoff for those without it and for unknown reasons or a garbled state).
    func resubscribeWait(retryAfter: Int?) -> SubscriptionState.ResubscribeWait?? {
        guard case .terminated(let reason, let resubscribe) = self, resubscribe else { return nil }
        switch reason {
        case "deactivated", "timeout": return .some(nil)
        case "probation", "giveup": return .some(retryAfter.map { .seconds($0) } ?? .backoff)
        default: return .some(.backoff)
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
