/// What the agent does for a call; the value decides, the agent carries every action out, in
/// order, and feeds back what came of it (the NIO shape: no action is read to decide anything).
enum CallAction: Hashable, Sendable {
    /// Start (or restart) a timer that fires at the instant given.
    case arm(CallTimer, at: ContinuousClock.Instant)
    /// Stop a timer; a timer already firing is ignored by the value.
    case disarm(CallTimer)
    /// Ring: 180 to the far end's INVITE, with our Contact.
    case sendRinging
    /// Answer the ringing INVITE with this final status.
    case respondToInvite(status: Int, reason: String)
    /// Send our 2xx to the far end's INVITE again: its ACK has not come (§13.3.1.4).
    case retransmitAnswer
    /// Publish the call's change (a ``CallEvent`` with the call's id, peer and direction).
    case report(CallReport)
    /// Log something worth knowing (what the agent cannot see in an event).
    case note(CallNote)
    /// Ask the media session for sections to offer (`answering` nil) or to answer `answering`
    /// with, in `direction`; feed back ``CallInput/mediaDescribed(_:_:address:)``.
    case describeMedia(MediaRequest, direction: SessionDescription.Direction, answering: SessionDescription?)
    /// Tell the media session what an exchange agreed.
    case negotiated(NegotiatedMedia)
    /// Send the attempt of our offer: an INVITE (with `Replaces` when given) or an UPDATE over
    /// the exchange's flow; feed back its provisionals and its final outcome.
    case sendOffer(OfferToSend)
    /// The exchange's last response was a usable challenge: answer it (the next attempt carries
    /// the credentials).
    case authorize(ExchangeID)
    /// CANCEL our INVITE still without a final response when it went out on `flow` (a
    /// provisional allowed it, RFC 3261 §9.1): stale or stalled.
    case cancelOffer(over: FlowNumber)
    /// Our ringing INVITE is abandoned for exchange `exchange`: ring again over `flow` with a new
    /// dialog identity (feed back ``CallInput/dialogChanged(_:)``); `abandoned` says what becomes
    /// of the old INVITE.
    case ringAgain(ExchangeID, over: FlowNumber, abandoned: AbandonedInvite)
    /// The far end's request at hand is accepted into the dialog (CSeq, target refresh): its
    /// offer is answered next.
    case acceptRequest
    /// Send our answer in a 2xx to the far end's offer we accepted (for an INVITE it is resent
    /// until the ACK: see the `answerResend` and `ackWait` timers).
    case sendAnswer(SessionDescription)
    /// Refuse the far end's request at hand (glare: 491, or 500 with `Retry-After` seconds).
    case refuseRequest(status: Int, reason: String, retryAfter: Int?)
    /// Refuse the far end's offer we accepted (the media cannot answer it, or no flow).
    case declineOffer(status: Int, reason: String)
    /// The exchange is over: its waiter goes on with this outcome.
    case completed(ExchangeID, ExchangeOutcome)
    /// The call is over: report it with this trigger and reason.
    case end(trigger: String, reason: String, downtime: Duration?)
    /// The confirmed call is over: report it, then send BYE.
    case bye(trigger: String, reason: String, downtime: Duration?)
}

extension CallAction {
    /// Whether it completes an exchange (still owed to its waiter once the call is gone).
    var isCompletion: Bool { if case .completed = self { true } else { false } }
}

/// One attempt of our offer, as the call machine asks for it.
struct OfferToSend: Hashable, Sendable {
    let exchange: ExchangeID
    let attempt: Int
    let method: String
    let offer: SessionDescription
    let replaces: String?
}

/// What becomes of our ringing INVITE when the call is rung again.
enum AbandonedInvite: Hashable, Sendable {
    /// CANCEL it now (a provisional allowed it, §9.1).
    case cancel
    /// Keep it: the new INVITE's `Replaces` names its early dialog; CANCELled only if the far end
    /// refuses the replacement.
    case keepForReplaces
    /// The far end refused the replacement: CANCEL the INVITE it was to replace (a provisional
    /// allowed it).
    case cancelReplaced
    /// Nothing to CANCEL (no provisional came).
    case forget
}

/// A change of a call as the agent publishes it (``CallEvent`` without the call's identity).
struct CallReport: Hashable, Sendable {
    var phase: CallPhase
    var trigger: String
    var note: String? = nil
    var glareRetries = 0
    var downtime: Duration? = nil
    var reinviteRoundTrip: Duration? = nil
    var recoveryTime: Duration? = nil
    var holdReasons: Set<HoldReason> = []
}
