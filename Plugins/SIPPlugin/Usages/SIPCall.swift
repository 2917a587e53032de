public import ResilienceCore

/// A call's identity in this agent: stable for the call's life, also its service id's suffix.
public struct CallID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// Where a call stands, as an app shows it.
public enum CallPhase: String, Hashable, Sendable {
    /// Our INVITE is out, no answer yet (ringing included).
    case outgoing
    /// The far end's INVITE is ringing here, waiting for ``SIPUserAgent/answer(_:media:path:)``.
    case incoming
    /// Confirmed, media both ways.
    case active
    /// Confirmed, held by this end (user, app or interruption).
    case held
    /// Confirmed, held by the far end (its offer was `sendonly` or `inactive`).
    case remotelyHeld
    /// Over: BYE, CANCEL, rejection, or lost (481/408 to a re-INVITE).
    case ended
}

/// Why this end holds a call. A call may be held for several reasons at once; it is resumed only
/// when the last one goes (an interruption ending does not resume a call the user held).
public enum HoldReason: String, Hashable, Sendable, CaseIterable {
    case user
    case interruption
}

/// One change of a call, in the order the agent saw it.
public struct CallEvent: Hashable, Sendable {
    public var call: CallID
    public var phase: CallPhase
    /// What caused it: `"api"`, `"remote"` (a request or response from the far end), `"timeout"`.
    public var trigger: String
    /// The far end's URI (From of an incoming call, Request-URI of an outgoing one).
    public var peer: String
    /// For an ended call: the status or method that ended it (`"BYE"`, `"486"`, `"481"`...).
    public var reason: String?
    /// Glare (491) retries the last re-INVITE needed.
    public var glareRetries: Int
    /// Who placed the call.
    public var direction: CallDirection

    public init(
        call: CallID, phase: CallPhase, trigger: String, peer: String, reason: String? = nil, glareRetries: Int = 0,
        direction: CallDirection
    ) {
        self.call = call
        self.direction = direction
        self.phase = phase
        self.trigger = trigger
        self.peer = peer
        self.reason = reason
        self.glareRetries = glareRetries
    }
}

/// One call's signalling state; media lives in the app's ``MediaSession``.
///
/// Invariants: `dialogID` names an entry of the agent's dialog table while the call is not
/// ended; `inviteInFlight` is true for at most one INVITE transaction (sent or received) at a
/// time (RFC 3261 §14.1); `holdReasons` is empty exactly when this end does not hold the call.
struct SIPCall {
    let id: CallID
    let isOutgoing: Bool
    let peer: String
    var dialogID: Dialog.ID
    var offerAnswer: SDPOfferAnswer
    let media: any MediaSession
    var phase: CallPhase
    var holdReasons: Set<HoldReason> = []
    var inviteInFlight = false
    /// An incoming INVITE not yet answered: its transaction and the request itself.
    var pendingInvite: (request: SIPMessage, transaction: ServerTransaction)?
    /// Our INVITE or re-INVITE while it has no final response (what a CANCEL copies).
    var outgoingInvite: SIPMessage?
    /// Our 2xx to an INVITE waiting for its ACK (CSeq number); nil when none.
    var awaitingAck: UInt32?

    /// The phase a confirmed call is in, from who holds it.
    var confirmedPhase: CallPhase {
        if !holdReasons.isEmpty { return .held }
        return offerAnswer.remoteHoldsUs ? .remotelyHeld : .active
    }
}

/// RFC 3261 §14.1: the wait before retrying a re-INVITE that got 491, chosen at random in
/// 2.1–4 s when this end owns the Call-ID (placed the call), 0–2 s otherwise, in 10 ms units.
enum GlareWait {
    static func range(ownsCallID: Bool) -> ClosedRange<Int> { ownsCallID ? 210...400 : 0...200 }

    static func duration(ownsCallID: Bool, using generator: inout some RandomNumberGenerator) -> Duration {
        .milliseconds(10 * Int.random(in: range(ownsCallID: ownsCallID), using: &generator))
    }

    /// At most this many 491 retries of one re-INVITE before the old session is kept.
    static let maximumRetries = 3
}

extension CallPhase {
    /// The call state the policy keys on (`ClientService`'s kind); nil once the call ended.
    public var serviceState: ResilienceCore.CallState? {
        switch self {
        case .outgoing: .progressing
        case .incoming: .alerting
        case .active: .active
        case .held: .held
        case .remotelyHeld: .remotelyHeld
        case .ended: nil
        }
    }
}

extension SIPAccount {
    /// The service id a call of this account is reported under.
    public func callService(_ call: CallID) -> ServiceID { ServiceID("\(name).call.\(call.rawValue)") }
}
