public import ResilienceCore

/// A call's identity in this agent: stable for the call's life, also its service id's suffix.
public struct CallID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// Where a call stands, as an app shows it: the policy's words (`ResilienceCore.CallState`) plus
/// `ended`, which the rules never see (an ended call is no service).
///
/// Invariant: every case but ``ended`` has the raw value of the `ResilienceCore.CallState` it
/// maps to (``serviceState``), so `netres ctl calls`, hooks, logs and metrics print the words a
/// policy file uses.
public enum CallPhase: String, Hashable, Sendable, CaseIterable {
    /// Our INVITE is out, no final answer yet (ringing included).
    case progressing
    /// The far end's INVITE is ringing here, waiting for ``SIPUserAgent/answer(_:media:path:)``.
    case alerting
    /// Confirmed, media both ways.
    case active
    /// Confirmed, held by this end (user, app or interruption).
    case held
    /// Confirmed, held by the far end (its offer was `sendonly` or `inactive`).
    case remotelyHeld = "remotely-held"
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
    /// What caused it: `"api"`, `"remote"` (a request or response from the far end), `"timeout"`,
    /// `"network"` (a re-INVITE after the path was restored or changed: a recovery), `"outage"`
    /// (ended on return because the path was lost longer than the call survival budget),
    /// `"server"` (ended because the server its dialog is record-routed through died, and its
    /// route leads to no living one).
    public var trigger: String
    /// The far end's URI (From of an incoming call, Request-URI of an outgoing one).
    public var peer: String
    /// For an ended call: the status or method that ended it (`"BYE"`, `"486"`, `"481"`...).
    public var reason: String?
    /// Glare (491) retries the last re-INVITE needed.
    public var glareRetries: Int
    /// Who placed the call.
    public var direction: CallDirection
    /// For a recovery or an end by the outage: how long the path was lost.
    public var downtime: Duration?
    /// For a re-INVITE answered: its transaction's round trip (send to final response, the
    /// last attempt after any glare retries).
    public var reinviteRoundTrip: Duration?
    /// For a recovery: from the path's return (or the action's start, for a change without a
    /// loss) to the far end's 2xx.
    public var recoveryTime: Duration?
    /// Why this end holds the call (empty when it does not): the plugin reports a call held for
    /// an interruption to the rules, which resume only those (`held-by-interruption`).
    public var holdReasons: Set<HoldReason>

    public init(
        call: CallID, phase: CallPhase, trigger: String, peer: String, reason: String? = nil, glareRetries: Int = 0,
        direction: CallDirection, downtime: Duration? = nil, reinviteRoundTrip: Duration? = nil,
        recoveryTime: Duration? = nil, holdReasons: Set<HoldReason> = []
    ) {
        self.holdReasons = holdReasons
        self.call = call
        self.direction = direction
        self.downtime = downtime
        self.reinviteRoundTrip = reinviteRoundTrip
        self.recoveryTime = recoveryTime
        self.phase = phase
        self.trigger = trigger
        self.peer = peer
        self.reason = reason
        self.glareRetries = glareRetries
    }
}

extension CallReport {
    /// The event of call `id` with `peer` this report makes.
    func event(of id: CallID, peer: String, outgoing: Bool) -> CallEvent {
        CallEvent(
            call: id, phase: phase, trigger: trigger, peer: peer, reason: note, glareRetries: glareRetries,
            direction: outgoing ? .outgoing : .incoming, downtime: downtime, reinviteRoundTrip: reinviteRoundTrip,
            recoveryTime: recoveryTime, holdReasons: holdReasons)
    }
}

extension CallPhase {
    /// The call state the policy keys on (`ClientService`'s kind); nil once the call ended.
    public var serviceState: ResilienceCore.CallState? { ResilienceCore.CallState(rawValue: rawValue) }
}

extension SIPAccount {
    /// The service id a call of this account is reported under.
    public func callService(_ call: CallID) -> ServiceID { ServiceID("\(name).call.\(call.rawValue)") }
}
