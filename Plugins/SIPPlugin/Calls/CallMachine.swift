/// One call as a value: everything about it that needs no I/O. Its phase; why this end holds it;
/// the one offer/answer slot with the session descriptions (RFC 3264), ours pending or theirs
/// being answered, glare and its retry wait (RFC 3261 §14, RFC 3311 §5); each offer of ours as
/// an exchange across its attempts (challenges, glare retries, ring-agains), INVITE and UPDATE
/// alike; the ringing timeout of an incoming call; the survival budget, judged once per loss;
/// early recovery with `Replaces` (RFC 3891); the wait for the ACK of our 2xx (§13.3.1.4).
/// Time comes in with every input; the agent performs every returned ``CallAction`` in order and
/// feeds back what came of it.
///
/// Invariants:
/// - The slot holds at most one offer at a time, ours (``OfferExchange/isPending``) or theirs
///   (``theirs``) (§14.1, RFC 3311 §5.1). Our offers waiting for it (``queued``) are recoveries;
///   any other offer of ours while it is busy fails (``ExchangeFailure/offerInProgress``).
/// - The far end's offer is refused 491 only while ours is pending (§14.2, RFC 3311 §5.2);
///   while we merely wait out our glare timer it is answered, and our retry waits for it.
/// - Every request that names an exchange gets exactly one ``CallAction/completed(_:_:)``; every
///   exchange still open when the call ends completes with ``ExchangeFailure/callEnded``.
/// - The phase changes only here: `ended` is final, and no action but `completed` follows it.
/// - A path loss is judged once per call (``CallSurvival``); a zero budget never ends a call.
/// - A ringing incoming call ends at the latest `ringingTimeout` after it began ringing, with 480.
struct CallMachine: Hashable, Sendable {
    /// The shortest and longest ringing timeout a setting may ask for (the account's default,
    /// like common phones, is 60 s: ``SIPAccount/ringingTimeout``).
    static let ringingTimeoutRange = Duration.seconds(1)...Duration.seconds(3_600)
    /// At most this many ring-agains of one ringing call (new flow, or `Replaces` refused).
    static let maximumEarlyRestarts = 3
    /// At most this many recoveries wait for the slot at once.
    static let maximumQueued = 8

    /// This end placed the call, so it owns the Call-ID (§14.1's longer glare wait).
    let ownsCallID: Bool
    /// When the call was created; with `survivedUntil`, which losses it lived through.
    let createdAt: ContinuousClock.Instant
    let timers: SIPTimers
    /// Written only by the machine's own files (as every `var` below).
    var phase: CallPhase
    /// The dialog's identity as the agent's dialog table has it.
    var dialog: Dialog.ID
    /// Why this end holds the call; empty exactly when it does not.
    var holdReasons: Set<HoldReason> = []
    /// The session descriptions: ours last sent, theirs in force, the `o=` version.
    var sdp: SDPOfferAnswer
    /// Our offer in progress (pending, in its glare wait, or waiting for a new flow).
    var ours: OfferExchange?
    /// Recoveries waiting for the slot, oldest first.
    var queued: [OfferExchange] = []
    /// The far end's offer being answered.
    var theirs: TheirOffer?
    /// When a ringing incoming call stops ringing (nil: not ringing).
    var ringingUntil: ContinuousClock.Instant?
    var survivedUntil: ContinuousClock.Instant?
    var early = EarlyDialog()
    /// The far end listed UPDATE in the `Allow` of its last INVITE or 2xx (RFC 3311 §5.1).
    var peerAllowsUpdate = false
    /// Our 2xx to an INVITE waiting for its ACK (nil: none waits).
    var ackWait: AckWait?
    /// When the slot-wait timer fires (nil: not armed).
    var slotWaitDeadline: ContinuousClock.Instant?
    /// Our last recovery the far end accepted (see ``OfferRecord``).
    var lastRecovery: OfferRecord?
    /// Glare waits and `Retry-After` values are drawn from here.
    var random: CallRandom

    /// A call we place: `progressing`, its first INVITE not yet asked for (``CallInput/place(_:flow:)``).
    init(
        placing dialog: Dialog.ID, sdp: SDPOfferAnswer, timers: SIPTimers, seed: UInt64, at now: ContinuousClock.Instant
    ) {
        self.init(phase: .progressing, dialog: dialog, sdp: sdp, timers: timers, seed: seed, at: now)
    }

    /// The far end's INVITE with `offer` (CSeq number `cseq`): `alerting`, the offer in the slot.
    /// - Throws: ``OfferAnswerError`` when the offer cannot be answered (refuse it 488).
    init(
        answering offer: SessionDescription, cseq: UInt32, localAddress: String?, dialog: Dialog.ID,
        sdp: SDPOfferAnswer, timers: SIPTimers, seed: UInt64, at now: ContinuousClock.Instant
    ) throws(OfferAnswerError) {
        try sdp.check(offer: offer, localAddress: localAddress)
        self.init(phase: .alerting, dialog: dialog, sdp: sdp, timers: timers, seed: seed, at: now)
        theirs = TheirOffer(method: "INVITE", cseq: cseq, offer: offer, initial: true)
    }

    /// A new call in `phase`: placed by this end when `progressing`.
    private init(
        phase: CallPhase, dialog: Dialog.ID, sdp: SDPOfferAnswer, timers: SIPTimers, seed: UInt64,
        at now: ContinuousClock.Instant
    ) {
        ownsCallID = phase == .progressing
        createdAt = now
        self.timers = timers
        self.phase = phase
        self.dialog = dialog
        self.sdp = sdp
        random = CallRandom(seed: seed)
    }

    /// Whether our offer is pending (the slot is ours).
    var ourOfferPending: Bool { ours?.isPending == true }
    /// Whether no offer is in progress and none of ours waits: a new offer of ours may go.
    var offerSlotFree: Bool { ours == nil && theirs == nil }
    /// Whether the far end's INVITE rings here.
    var isRinging: Bool { ringingUntil != nil }
    /// The flows the call's offers still name (ours, the queued ones, one handed for a ring-again).
    var flowsInUse: Set<FlowNumber> {
        var flows = Set(queued.map(\.flow))
        if let ours { flows.insert(ours.flow) }
        if let handed = early.handedFlow { flows.insert(handed) }
        return flows
    }

    /// Whether a dialog is confirmed and the call not over.
    var isEstablished: Bool { [.active, .held, .remotelyHeld].contains(phase) }

    mutating func handle(_ input: CallInput, at now: ContinuousClock.Instant) -> [CallAction] {
        if phase == .ended { return afterEnd(input) }
        switch input {
        case .ringing, .answer, .reject, .cancelled, .timerFired(.ringing): return handleRinging(input, at: now)
        case .answerSent, .ackArrived, .timerFired(.answerResend), .timerFired(.ackWait):
            return handleAckWait(input, at: now)
        case .timerFired(.glareRetry): return glareTimerFired(at: now)
        case .timerFired(.offerSlotWait): return slotWaitFired(at: now)
        case .timerFired(.restartWait): return restartWaitFired(at: now)
        case .place(let id, let flow):
            let exchange = OfferExchange(
                id: id, purpose: .place, hold: false, flow: flow, stage: .queued(until: now, stalled: false))
            return [.report(report(trigger: "api"))] + startLocalOffer(exchange, at: now)
        case .hold(let reason, let id, let flow): return hold(reason, id, flow: flow, at: now)
        case .resume(let reason, let id, let flow, let address, let survival):
            return resume(reason, id, flow: flow, address: address, survival: survival, at: now)
        case .recover(let id, let flow, let survival): return recover(id, flow: flow, survival: survival, at: now)
        case .abandon(let id): return abandon(id, at: now)
        case .mediaDescribed(.offer(let id, let attempt), let result, let address):
            return offerDescribed(id, attempt: attempt, result, address: address, at: now)
        case .mediaDescribed(.answer, let result, let address):
            return answerDescribed(result, address: address, at: now)
        case .provisional(let id, let attempt, let status, let toTag, let replaces):
            return provisional(id, attempt: attempt, status: status, toTag: toTag, supportsReplaces: replaces)
        case .offerResponse(let id, let attempt, let response): return offerResponse(id, attempt, response, at: now)
        case .newFlow(let flow): return newFlow(flow, at: now)
        case .dialogChanged(let id):
            dialog = id
            return []
        case .remoteOffer(let method, let cseq, let offer, let local):
            return remoteOffer(method: method, cseq: cseq, offer, localAddress: local, at: now)
        case .peerAllows(let methods):
            notePeerAllows(methods)
            return []
        case .byeReceived: return finish(trigger: "remote", reason: "BYE")
        case .terminate(let trigger, let reason, let downtime):
            return finish(trigger: trigger, reason: reason, downtime: downtime)
        }
    }

    /// An ended call answers only requests that name an exchange: each completes at once.
    private func afterEnd(_ input: CallInput) -> [CallAction] {
        switch input {
        case .place(let id, _), .hold(_, let id, _), .resume(_, let id, _, _, _), .recover(let id, _, _):
            [.completed(id, .failed(.callEnded))]
        default: []
        }
    }

    /// The phase a confirmed call is in: held when this end holds it, else remotely held when
    /// the far end's description in force receives nothing from us.
    var confirmedPhase: CallPhase {
        if !holdReasons.isEmpty { return .held }
        return sdp.remoteHoldsUs ? .remotelyHeld : .active
    }

    /// A report of the current phase.
    func report(trigger: String, note: String? = nil) -> CallReport {
        CallReport(phase: phase, trigger: trigger, note: note, holdReasons: holdReasons)
    }

    mutating func notePeerAllows(_ methods: [String]) {
        guard !methods.isEmpty else { return }
        peerAllowsUpdate = methods.contains { $0.trimmingSIPWhitespace().uppercased() == "UPDATE" }
    }

    /// The call is over: every exchange still open completes (`callEnded`), no timer is left
    /// for it to fire (the agent cancels them all with `end`), and BYE goes when `bye`.
    mutating func finish(trigger: String, reason: String, downtime: Duration? = nil, bye: Bool = false) -> [CallAction]
    {
        guard phase != .ended else { return [] }
        phase = .ended
        ringingUntil = nil
        ackWait = nil
        theirs = nil
        let open = (ours.map { [$0] } ?? []) + queued
        ours = nil
        queued = []
        let end: CallAction =
            bye
            ? .bye(trigger: trigger, reason: reason, downtime: downtime)
            : .end(trigger: trigger, reason: reason, downtime: downtime)
        return [end] + open.map { .completed($0.id, .failed(.callEnded)) }
    }
}
