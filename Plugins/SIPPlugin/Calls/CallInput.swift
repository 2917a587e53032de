/// The timers a call arms on the agent's lent clock.
enum CallTimer: Hashable, Sendable, CaseIterable {
    /// An incoming call rings at most this long (RFC 3261 §13.3.1.1: the UAS ends it 480).
    case ringing
    /// Our offer got 491: the wait before it is sent again (§14.1).
    case glareRetry
    /// Our 2xx to an INVITE waits for its ACK: resend it (T1, doubling to T2, §13.3.1.4).
    case answerResend
    /// Our 2xx to an INVITE waits for its ACK: give up at 64×T1 (§13.3.1.4).
    case ackWait
    /// Our ringing INVITE's flow went: the wait for the policy's `reinvite-call` to hand a new one.
    case restartWait
    /// An offer of ours waits for the call's one offer/answer slot: the earliest deadline of the
    /// waits (a recovery behind another offer, a glare retry behind the far end's offer).
    case offerSlotWait
}

/// One request for an offer of ours (placing, hold, resume, recovery), named by the agent so it
/// can await the request's ``CallAction/completed(_:_:)``. Never reused within an agent.
struct ExchangeID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let rawValue: UInt64
    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    var description: String { "x\(rawValue)" }
}

/// A flow as a call sees it: a number the agent gives each flow object and never gives another
/// (a flow that went is never equal to a new one, even at the same address).
struct FlowNumber: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64
    var description: String { "f\(rawValue)" }
}

/// The call survival budget's inputs (policy `call-survival-budget`): the path's last loss and
/// the budget (``CallSurvival``).
struct SurvivalCheck: Hashable, Sendable {
    var loss: Range<ContinuousClock.Instant>?
    var budget: Duration
}

/// An SDP body as the agent read it from the wire.
enum SDPBody: Hashable, Sendable {
    case parsed(SessionDescription)
    /// It did not parse; the parser's words (escaped before they are logged).
    case unparsable(String)
}

/// The final outcome of one request of our offer (INVITE or UPDATE), as the agent saw it.
enum OfferResponse: Hashable, Sendable {
    /// 2xx: the answer's body and the far end's `Allow` (an INVITE's 2xx is already ACKed).
    case answered(SDPBody, allow: [String])
    /// 401 or 407; `usable`: it carried a Digest challenge we can answer.
    case challenged(status: Int, usable: Bool)
    /// Any other final response (300–699).
    case refused(status: Int)
    /// No final response (timer B or F, or the flow closed). `flowGone`: the request's flow is no
    /// longer the agent's or died (the far end may have moved, not gone silent); `lostOnItsOwn`:
    /// the server or network ended it, not the agent.
    case noAnswer(flowGone: Bool, lostOnItsOwn: Bool)
}

/// What the media session was asked for: the offer of an attempt of ours, or our answer.
enum MediaRequest: Hashable, Sendable {
    case offer(ExchangeID, attempt: Int)
    case answer
}

/// Why the media session gave no description.
enum MediaFailure: Error, Hashable, Sendable {
    /// No flow to answer on (the agent has none open).
    case noFlow
    /// The media session refused (the error's words).
    case refused(String)
}

/// What happens to a call, fed to ``CallMachine/handle(_:at:)``.
enum CallInput: Hashable, Sendable {
    // The far end's INVITE ringing here.
    /// The far end's INVITE rings here (180 sent); `timeout` is the account's ringing timeout.
    case ringing(timeout: Duration)
    /// The app answers the ringing call (the 200 goes with our answer).
    case answer
    /// The app rejects (or hangs up) the ringing call with this status and reason phrase.
    case reject(status: Int, reason: String)
    /// The far end CANCELled its ringing INVITE (the transaction layer answered it 487).
    case cancelled
    /// A timer of this call fired.
    case timerFired(CallTimer)

    // Our offers: each request names an exchange, which ends in exactly one `completed`.
    /// Place the call: the first INVITE, over `flow`.
    case place(ExchangeID, flow: FlowNumber)
    /// This end holds the call for `reason` (user, interruption).
    case hold(HoldReason, ExchangeID, flow: FlowNumber)
    /// This end withdraws `reason`; `address` is the flow's local address (a call that stays held
    /// is re-offered as held only when it moved). `survival`: judge a path loss first.
    case resume(HoldReason, ExchangeID, flow: FlowNumber, address: String, survival: SurvivalCheck?)
    /// The path came back or changed: recover the established call over `flow` (re-INVITE or
    /// UPDATE), once the survival budget is judged.
    case recover(ExchangeID, flow: FlowNumber, survival: SurvivalCheck)
    /// The app or the policy gave up waiting for the exchange (its task was cancelled).
    case abandon(ExchangeID)
    /// The media session's description for an offer or our answer, at the flow's `address`.
    case mediaDescribed(MediaRequest, Result<[SessionDescription.Media], MediaFailure>, address: String)
    /// A provisional response to the attempt of our INVITE: its status, To tag (an early dialog)
    /// and whether the far end lists `replaces` in `Supported` or `Allow` (RFC 3891 §4).
    case provisional(ExchangeID, attempt: Int, status: Int, toTag: String?, supportsReplaces: Bool)
    /// The final outcome of the attempt of our offer.
    case offerResponse(ExchangeID, attempt: Int, OfferResponse)
    /// Our ringing INVITE's path has a new flow (the policy's `reinvite-call`).
    case newFlow(FlowNumber)
    /// The agent changed the call's dialog identity (confirmed by a 2xx, or new for a ring-again).
    case dialogChanged(Dialog.ID)

    // The far end's offers and requests.
    /// The far end's re-INVITE or UPDATE with CSeq number `cseq` carries an offer; `localAddress`
    /// is our flow's (a loopback media address is accepted only from loopback, ``MediaTarget``).
    case remoteOffer(method: String, cseq: UInt32, offer: SDPBody, localAddress: String?)
    /// The `Allow` of the far end's INVITE or 2xx (empty: it said nothing, nothing changes).
    case peerAllows([String])
    /// Our 2xx to the far end's INVITE (CSeq number `cseq`) went for the first time: it is
    /// resent on `timers` until its ACK arrives or 64×T1 passes (RFC 3261 §13.3.1.4).
    case answerSent(cseq: UInt32, timers: SIPTimers)
    /// An ACK arrived in the call's dialog with this CSeq number.
    case ackArrived(cseq: UInt32)
    /// The far end's BYE (answered 200).
    case byeReceived
    /// The call is over for a reason the agent saw (a hang-up, its server's death, timer H):
    /// reported with this trigger and reason.
    case terminate(trigger: String, reason: String, downtime: Duration?)
}
