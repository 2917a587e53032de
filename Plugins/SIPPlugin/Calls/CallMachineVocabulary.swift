/// The timers a call arms on the agent's lent clock.
enum CallTimer: Hashable, Sendable {
    /// An incoming call rings at most this long (RFC 3261 §13.3.1.1: the UAS ends it 480).
    case ringing
    /// Our offer got 491: the wait before it is sent again (§14.1).
    case glareRetry
    /// Our 2xx to an INVITE waits for its ACK: resend it (T1, doubling to T2, §13.3.1.4).
    case answerResend
    /// Our 2xx to an INVITE waits for its ACK: give up at 64×T1 (§13.3.1.4).
    case ackWait
}

/// What the agent does for a call; the value decides, the agent carries it out.
enum CallAction: Hashable, Sendable {
    /// Start (or restart) a timer that fires at the instant given.
    case arm(CallTimer, at: ContinuousClock.Instant)
    /// Stop a timer; a timer already firing is ignored by the value.
    case disarm(CallTimer)
    /// Answer the ringing INVITE with this final status.
    case respondToInvite(status: Int, reason: String)
    /// The far end's offer may be answered now (the offer slot is theirs until answered).
    case answerOffer
    /// Refuse the far end's offer: 491, or 500 with `Retry-After` (seconds).
    case refuseOffer(status: Int, reason: String, retryAfter: Int?)
    /// Our offer may go now (the slot is ours).
    case sendOffer
    /// Our offer must wait until the slot is free (the far end's offer is being answered).
    case waitForOfferSlot
    /// The call is over: report it with this trigger and reason.
    case end(trigger: String, reason: String, downtime: Duration?)
    /// A path loss the call survived: recover it (re-INVITE or UPDATE), reporting the downtime.
    case recover(downtime: Duration?)
    /// Send an offer that holds the call (`hold`) or resumes it (re-INVITE `sendonly`/`sendrecv`).
    case offer(hold: Bool)
    /// Ring the far end again from the new flow: a new INVITE, with this `Replaces` value when
    /// the far end supports RFC 3891, else after a CANCEL of the abandoned INVITE.
    case ringAgain(replaces: String?)
    /// Send our 2xx to the far end's INVITE again: its ACK has not come (§13.3.1.4).
    case retransmitAnswer
}

/// What happens to a call, fed to ``CallMachine/handle(_:at:)``.
enum CallInput: Hashable, Sendable {
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
    /// The far end's re-INVITE or UPDATE carries an offer. `ourOfferRefused`: our own pending
    /// offer's final non-2xx (a 491) has already arrived, before the call heard of it (the
    /// transaction layer notes it as it arrives, the far end's request may overtake it here).
    case remoteOffer(method: String, ourOfferRefused: Bool = false)
    /// Our answer to the far end's offer went (2xx) or it was refused: the slot is free.
    case remoteOfferSettled
    /// The app or the policy wants to send an offer (re-INVITE or UPDATE).
    case localOffer(method: String)
    /// Our offer's final status; `glareWait` is the random wait a 491 starts (§14.1).
    case localOfferFinal(status: Int, glareWait: Duration)
    /// Our offer settled, failed or was given up (during its glare wait included).
    case localOfferWithdrawn
    /// A provisional response to our INVITE: its To tag (an early dialog) and whether the far end
    /// lists `replaces` in `Supported` or `Allow` (RFC 3891 §4).
    case provisional(toTag: String?, supportsReplaces: Bool)
    /// Our ringing INVITE's flow went: ring again from the new one. `dialog` is its identity.
    case earlyFlowLost(dialog: Dialog.ID)
    /// The far end refused our `Replaces` INVITE (481, 420, 486): ring again without it.
    case replacesRefused
    /// The path came back after `loss`; `budget` is the policy's `call-survival-budget`.
    case pathReturned(loss: Range<ContinuousClock.Instant>?, budget: Duration)
    /// This end holds the call for `reason` (user, interruption).
    case hold(HoldReason)
    /// This end withdraws `reason` for holding the call.
    case resume(HoldReason)
    /// The offer a `hold` or `resume` asked for failed: the reason is taken back (RFC 6141: the
    /// old session stays).
    case holdOfferFailed(HoldReason, holding: Bool)
    /// The `Allow` of the far end's INVITE or 2xx (empty: it said nothing, nothing changes).
    case peerAllows([String])
    /// Our 2xx to the far end's INVITE (CSeq number `cseq`) went for the first time: it is
    /// resent on `timers` until its ACK arrives or 64×T1 passes (RFC 3261 §13.3.1.4).
    case answerSent(cseq: UInt32, timers: SIPTimers)
    /// An ACK arrived in the call's dialog with this CSeq number.
    case ackArrived(cseq: UInt32)
}
