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

    public init(
        call: CallID, phase: CallPhase, trigger: String, peer: String, reason: String? = nil, glareRetries: Int = 0,
        direction: CallDirection, downtime: Duration? = nil, reinviteRoundTrip: Duration? = nil,
        recoveryTime: Duration? = nil
    ) {
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

/// One call's signalling state; media lives in the app's ``MediaSession``. Its pure state
/// (phase, offer/answer slot, ringing timeout, survival bookkeeping, early-recovery knowledge)
/// is the ``CallMachine`` value; the rest is what the agent needs for I/O (transactions, the
/// messages a CANCEL or an ACK copies, the flows offers went over, armed timers).
///
/// Invariants: `dialogID` names an entry of the agent's dialog table while the call is not
/// ended; the machine's offer slot holds at most one offer (ours or theirs) at a time (RFC 3261
/// §14.1); the machine's hold reasons are empty exactly when this end does not hold the call; `timers` holds
/// at most one task per ``CallTimer``, all cancelled when the call ends; `sentAnswer` is the 2xx
/// the machine's ACK wait resends.
struct SIPCall {
    let id: CallID
    let isOutgoing: Bool
    let peer: String
    var dialogID: Dialog.ID
    var offerAnswer: SDPOfferAnswer
    /// The app's media; a ringing incoming call holds a placeholder until answered.
    var media: any MediaSession
    var machine: CallMachine
    /// An incoming INVITE not yet answered: its transaction and the request itself.
    var pendingInvite: (request: SIPMessage, transaction: ServerTransaction)?
    /// Our INVITE or re-INVITE while it has no final response (what a CANCEL copies).
    var outgoingInvite: SIPMessage?
    /// Our UPDATE with an offer while it has no final response (its transaction says whether a
    /// refusal arrived: ``TransactionTable/refusalArrived(for:)``).
    var outgoingUpdate: SIPMessage?
    /// Our last 2xx to an INVITE and how it is sent (its server transaction): what
    /// ``CallAction/retransmitAnswer`` resends while the machine waits for the ACK.
    var sentAnswer: SentAnswer?
    /// A provisional response (100 included) arrived for `outgoingInvite`: only then may it be
    /// CANCELled (RFC 3261 §9.1).
    var heardProvisional = false
    /// A ringing outgoing call whose flow went: the new path's flow to ring again from.
    var restartFlow: SIPTransport?
    /// The INVITE a `Replaces` INVITE (RFC 3891) stands in for, with whether it heard a
    /// provisional, and the `Replaces` value: CANCELled only when the far end refuses.
    var replacing: (invite: SIPMessage, heardProvisional: Bool, value: String)?
    /// What our re-INVITE or UPDATE without a final response offers (flow, hold, when).
    var offerInFlight: SentOffer?
    /// Our last recovery offer (`reinvite-call`) the far end accepted with a 2xx (see ``SentOffer``).
    var lastRecovery: SentOffer?
    /// The timers the machine armed (see ``CallTimer``).
    var timers: [CallTimer: Task<Void, Never>] = [:]

    init(
        id: CallID, isOutgoing: Bool, peer: String, dialogID: Dialog.ID, offerAnswer: SDPOfferAnswer,
        media: any MediaSession, phase: CallPhase, createdAt: ContinuousClock.Instant
    ) {
        self.id = id
        self.isOutgoing = isOutgoing
        self.peer = peer
        self.dialogID = dialogID
        self.offerAnswer = offerAnswer
        self.media = media
        self.machine = CallMachine(phase: phase, createdAt: createdAt)
    }

    /// The CSeq number of the INVITE whose 2xx waits for its ACK (the machine's ``AckWait``).
    var awaitingAck: UInt32? { machine.ackWait?.cseq }

    /// The machine's phase.
    var phase: CallPhase {
        get { machine.phase }
        set { machine.enter(newValue) }
    }

    /// Takes in the `Allow` of a message from the far end; one without `Allow` changes nothing.
    mutating func notePeerAllow(_ message: SIPMessage) {
        _ = machine.handle(.peerAllows(message.headers.listValues("Allow")), at: machine.createdAt)
    }

    /// Whether this end holds the call (the machine's hold reasons).
    var isHeldHere: Bool { !machine.holdReasons.isEmpty }

    /// The phase a confirmed call is in, from who holds it.
    var confirmedPhase: CallPhase { machine.confirmedPhase(remoteHoldsUs: offerAnswer.remoteHoldsUs) }
}

/// Our 2xx to an INVITE as sent: the response and its server transaction's `respond`.
struct SentAnswer {
    let response: SIPMessage
    let respond: @Sendable (SIPMessage, ContinuousClock.Instant) -> Void
}

/// One offer of ours in a call (INVITE, re-INVITE or UPDATE): the flow it went over (its
/// Contact and `c=` are that flow's address), whether it held the call, and when it went.
///
/// A recovery (`reinvite-call`) whose offer would be the same (same flow, same hold) as the
/// last recovery the far end accepted since the path last came back carries nothing new: it is
/// coalesced into it (a burst of changes ends in one re-INVITE).
struct SentOffer {
    /// Weak: a flow the agent replaced may go; an offer over a flow that went covers nothing.
    weak var flow: SIPTransport?
    let hold: Bool
    let sentAt: ContinuousClock.Instant

    /// Whether this offer already says what a new one over `flow` with `hold` would, for a
    /// path whose last loss ended at `lossEnded` (nil: never lost).
    func covers(flow other: SIPTransport, hold: Bool, lossEnded: ContinuousClock.Instant?) -> Bool {
        flow === other && self.hold == hold && lossEnded.map { sentAt >= $0 } ?? true
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
    public var serviceState: ResilienceCore.CallState? { ResilienceCore.CallState(rawValue: rawValue) }
}

extension SIPAccount {
    /// The service id a call of this account is reported under.
    public func callService(_ call: CallID) -> ServiceID { ServiceID("\(name).call.\(call.rawValue)") }
}

/// The call survival budget (policy `call-survival-budget`) as a pure rule: a call that lived
/// through a loss of the path longer than the budget is ended on the path's return instead of
/// recovered. Time is passed in.
///
/// Invariants: a zero budget never ends a call; a loss is judged once per call (a loss that
/// ended at or before `survivedUntil`, or before the call existed, is not this call's); the
/// downtime counted is the part of the loss the call was alive for.
enum CallSurvival {
    /// The downtime that exceeded `budget`, or nil when the call survives (or the loss is not
    /// news to it).
    static func exceeded(
        loss: Range<ContinuousClock.Instant>?, createdAt: ContinuousClock.Instant,
        survivedUntil: ContinuousClock.Instant?, budget: Duration
    ) -> Duration? {
        guard let downtime = downtime(of: loss, createdAt: createdAt, survivedUntil: survivedUntil),
            budget > .zero, downtime > budget
        else { return nil }
        return downtime
    }

    /// The part of `loss` the call lived through, when that loss is news to it.
    static func downtime(
        of loss: Range<ContinuousClock.Instant>?, createdAt: ContinuousClock.Instant,
        survivedUntil: ContinuousClock.Instant?
    ) -> Duration? {
        guard let loss, loss.upperBound > createdAt, loss.upperBound > (survivedUntil ?? createdAt) else { return nil }
        return loss.upperBound - max(loss.lowerBound, createdAt)
    }
}
