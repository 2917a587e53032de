/// Why we offer: what a failure takes back, and what the answer is reported as.
enum OfferPurpose: Hashable, Sendable {
    /// The first INVITE of a call we place: its failure ends the call.
    case place
    /// This end holds the call for the reason: a failure takes the reason back (RFC 6141).
    case hold(HoldReason)
    /// The last reason was withdrawn: a failure puts it back (the old session stays).
    case resume(HoldReason)
    /// A call that stays held, re-offered as held because its address moved.
    case reoffer
    /// A recovery after a loss or change of the path (`reinvite-call`): the downtime it recovers
    /// from, when its recovery time started, and when the loss ended (for coalescing).
    case recovery(downtime: Duration?, since: ContinuousClock.Instant, lossEnded: ContinuousClock.Instant?)
}

/// One offer of ours, from the request to its completion, across its attempts (a challenge, a
/// glare retry or a ring-again each send a new request): INVITE and UPDATE alike.
///
/// Invariants: at most 2 challenges, ``GlareWait/maximumRetries`` glare retries and
/// ``CallMachine/maximumEarlyRestarts`` ring-agains follow the first attempt; `attempt` numbers
/// grow by one per request, so a response to an earlier attempt is told apart.
struct OfferExchange: Hashable, Sendable {
    enum Stage: Hashable, Sendable {
        /// The media session is asked for the attempt's sections.
        case describing(attempt: Int)
        /// The attempt's request is out with this offer since `at`.
        case sent(attempt: Int, offer: SessionDescription, at: ContinuousClock.Instant)
        /// Refused 491: waits out its glare timer (RFC 3261 §14.1).
        case glareWait(until: ContinuousClock.Instant)
        /// The glare timer fired while the far end's offer is answered: the retry waits for it,
        /// at most until the instant given.
        case glareReady(until: ContinuousClock.Instant)
        /// Our ringing INVITE's flow went: waits for a new one until the instant given.
        case flowWait(until: ContinuousClock.Instant)
        /// A recovery behind another offer: waits for the slot until the instant given (once
        /// more after a stall).
        case queued(until: ContinuousClock.Instant, stalled: Bool)
    }

    let id: ExchangeID
    let purpose: OfferPurpose
    var method = "INVITE"
    var hold: Bool
    var flow: FlowNumber
    var stage: Stage
    var attempts = 0
    var challenges = 0
    var glareRetries = 0
    var restarts = 0
    /// Its waiter gave up: no further attempt goes (the one out is still seen to its end).
    var abandoned = false

    static let maximumChallenges = 2

    /// Whether our offer is pending (the slot is ours, RFC 3261 §14.2): describing or sent.
    var isPending: Bool {
        switch stage {
        case .describing, .sent: true
        case .glareWait, .glareReady, .flowWait, .queued: false
        }
    }

    /// The request's name in errors: `INVITE` (placing), `re-INVITE` or `UPDATE`.
    var requestName: String {
        if method == "UPDATE" { return "UPDATE" }
        return purpose == .place ? "INVITE" : "re-INVITE"
    }

    var isRecovery: Bool { if case .recovery = purpose { true } else { false } }
}

/// An offer of ours the far end accepted: a recovery that would say the same (same flow, so the
/// same Contact and `c=`; same hold) since the path last came back carries nothing new.
struct OfferRecord: Hashable, Sendable {
    let flow: FlowNumber
    let hold: Bool
    let sentAt: ContinuousClock.Instant

    /// Whether this offer already says what a new one over `flow` with `hold` would, for a
    /// path whose last loss ended at `lossEnded` (nil: never lost).
    func covers(flow other: FlowNumber, hold: Bool, lossEnded: ContinuousClock.Instant?) -> Bool {
        flow == other && self.hold == hold && lossEnded.map { sentAt >= $0 } ?? true
    }
}

/// The far end's offer while we answer it.
struct TheirOffer: Hashable, Sendable {
    let method: String
    /// The request's CSeq number (its ACK carries it, for an INVITE).
    let cseq: UInt32
    let offer: SessionDescription
    /// The INVITE that made the call, ringing here until answered.
    let initial: Bool
}

/// What an outgoing call knows of its early dialog, for ringing again (RFC 3891).
struct EarlyDialog: Hashable, Sendable {
    /// The far end's tag from a provisional to our ringing INVITE, if any.
    var remoteTag: String?
    /// The far end listed `replaces` in `Supported` or `Allow` of a provisional, and has not
    /// refused a replacement since (a refusal is for the call's life).
    var peerSupportsReplaces = false
    var replacesWasRefused = false
    /// A provisional (100 included) arrived for our INVITE out now: it may be CANCELled (§9.1).
    var heardProvisional = false
    /// The new flow the policy handed while the INVITE still ran (nil: none yet).
    var handedFlow: FlowNumber?
    /// The `Replaces` our INVITE out now carries.
    var replaces: String?
    /// The INVITE that `replaces` stands in for heard a provisional (a CANCEL may go).
    var replacedHeardProvisional = false
}
