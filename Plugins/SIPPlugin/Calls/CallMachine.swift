/// One call's pure state: its phase, why this end holds it, the offer/answer slot with glare
/// (RFC 3261 §14, RFC 3311 §5), the far end's capabilities (UPDATE, Replaces), the ringing
/// timeout of an incoming call, the survival budget's bookkeeping and the early-recovery
/// decision (RFC 3891). No I/O and no clock: time comes in with every input; the agent performs
/// the returned ``CallAction``s and feeds back what happened.
///
/// Invariants:
/// - The offer slot holds at most one offer at a time, ours or theirs (§14.1, RFC 3311 §5.1).
/// - The far end's offer is refused 491 only while *our* offer is pending (§14.2, RFC 3311
///   §5.2); while we merely wait out our glare timer it is answered, and our retry waits for it.
/// - A ringing incoming call ends at the latest `ringingTimeout` after it began ringing, with 480
///   (or earlier with the app's status, or by the far end's CANCEL, which got 487).
/// - A path loss is judged once per call (``CallSurvival``); a zero budget never ends a call.
/// - Our 2xx to an INVITE is resent until the ACK with its CSeq number arrives, and the call
///   ends (`"no ACK"`) at 64×T1 without one (§13.3.1.4; ``AckWait``); a newer 2xx replaces the
///   wait of an older one.
struct CallMachine: Hashable, Sendable {
    /// Who holds the offer/answer slot of the call's dialog.
    enum OfferSlot: Hashable, Sendable {
        case idle
        /// Our re-INVITE or UPDATE is out without a final response.
        case ours(method: String)
        /// Our offer got 491; we wait until this instant before sending it again.
        case glareWait(until: ContinuousClock.Instant)
        /// The far end's offer is being answered.
        case theirs(method: String)
    }

    /// The shortest and longest ringing timeout a setting may ask for (the account's default,
    /// like common phones, is 60 s: ``SIPAccount/ringingTimeout``).
    static let ringingTimeoutRange = Duration.seconds(1)...Duration.seconds(3_600)

    private(set) var phase: CallPhase
    private(set) var offerSlot = OfferSlot.idle
    /// When a ringing incoming call stops ringing (nil: not ringing).
    private(set) var ringingUntil: ContinuousClock.Instant?
    /// When the call was created; with `survivedUntil`, which losses it lived through.
    let createdAt: ContinuousClock.Instant
    private(set) var survivedUntil: ContinuousClock.Instant?
    /// The far end's tag from a provisional to our ringing INVITE (an early dialog), if any.
    private(set) var earlyRemoteTag: String?
    /// Why this end holds the call; empty exactly when it does not.
    private(set) var holdReasons: Set<HoldReason> = []
    /// The far end listed UPDATE in the `Allow` of its last INVITE or 2xx (RFC 3311 §5.1).
    private(set) var peerAllowsUpdate = false
    /// The far end listed `replaces` in `Supported` or `Allow` of a provisional (RFC 3891), and
    /// has not refused a replacement since (a refusal is for the call's life).
    private(set) var peerSupportsReplaces = false
    private var replacesWasRefused = false
    /// Our 2xx to an INVITE waiting for its ACK (nil: none waits).
    var ackWait: AckWait?

    init(phase: CallPhase, createdAt: ContinuousClock.Instant) {
        self.phase = phase
        self.createdAt = createdAt
    }

    /// Whether our offer is out (the slot is ours).
    var ourOfferPending: Bool { if case .ours = offerSlot { true } else { false } }
    /// Whether no offer is in progress and none of ours waits to be retried: a new offer of
    /// ours may go.
    var offerSlotFree: Bool { offerSlot == .idle }

    /// The phase changes the agent decides from messages (confirmed, held, ended).
    mutating func enter(_ phase: CallPhase) { self.phase = phase }

    mutating func handle(_ input: CallInput, at now: ContinuousClock.Instant) -> [CallAction] {
        switch input {
        case .ringing(let timeout):
            let bounded = min(max(timeout, Self.ringingTimeoutRange.lowerBound), Self.ringingTimeoutRange.upperBound)
            ringingUntil = now + bounded
            return [.arm(.ringing, at: now + bounded)]
        case .answer:
            guard ringingUntil != nil else { return [] }
            ringingUntil = nil
            return [.disarm(.ringing)]
        case .reject(let status, let phrase):
            guard ringingUntil != nil else { return [] }
            ringingUntil = nil
            let code = min(max(status, 400), 699)
            phase = .ended
            return [
                .disarm(.ringing), .respondToInvite(status: code, reason: phrase),
                .end(trigger: "api", reason: "\(code)", downtime: nil),
            ]
        case .cancelled:
            ringingUntil = nil
            phase = .ended
            return [.disarm(.ringing), .end(trigger: "remote", reason: "CANCEL", downtime: nil)]
        case .timerFired(.ringing):
            // §13.3.1.1: a UAS that cannot answer "within a reasonable time" ends the INVITE;
            // 480 Temporarily Unavailable says the callee was not reachable now.
            guard phase == .alerting, let until = ringingUntil, now >= until else { return [] }
            ringingUntil = nil
            phase = .ended
            return [
                .respondToInvite(status: 480, reason: "Temporarily Unavailable"),
                .end(trigger: "timeout", reason: "480", downtime: nil),
            ]
        case .timerFired(.glareRetry):
            guard case .glareWait = offerSlot else { return [] }
            offerSlot = .idle
            return [.sendOffer]
        case .remoteOffer(let method, let refused): return remoteOffer(method: method, ourOfferRefused: refused)
        case .remoteOfferSettled:
            if case .theirs = offerSlot { offerSlot = .idle }
            return []
        case .localOffer(let method):
            switch offerSlot {
            case .idle:
                offerSlot = .ours(method: method)
                return [.sendOffer]
            // A glare wait ends by its timer (then the retry goes first).
            case .glareWait, .ours, .theirs: return [.waitForOfferSlot]
            }
        case .localOfferWithdrawn:
            switch offerSlot {
            case .ours, .glareWait: offerSlot = .idle
            case .idle, .theirs: break
            }
            return []
        case .localOfferFinal(let status, let wait):
            guard case .ours = offerSlot else { return [] }
            guard status == 491 else {
                offerSlot = .idle
                return []
            }
            offerSlot = .glareWait(until: now + wait)
            return [.arm(.glareRetry, at: now + wait)]
        case .provisional(let toTag, let supportsReplaces):
            if let toTag, !toTag.isEmpty { earlyRemoteTag = toTag }
            peerSupportsReplaces = !replacesWasRefused && (peerSupportsReplaces || supportsReplaces)
            return []
        case .earlyFlowLost(let dialog): return earlyFlowLost(dialog)
        case .replacesRefused:
            replacesWasRefused = true
            peerSupportsReplaces = false
            earlyRemoteTag = nil
            return phase == .progressing ? [.ringAgain(replaces: nil)] : []
        case .pathReturned(let loss, let budget): return pathReturned(loss: loss, budget: budget)
        case .hold(let reason):
            // A call already held for another reason only records this one.
            guard phase != .ended, holdReasons.insert(reason).inserted, holdReasons.count == 1 else { return [] }
            return [.offer(hold: true)]
        case .resume(let reason):
            // The last reason gone resumes; an interruption ending leaves a user's hold alone.
            guard phase != .ended, holdReasons.remove(reason) != nil, holdReasons.isEmpty else { return [] }
            return [.offer(hold: false)]
        case .holdOfferFailed(let reason, let holding):
            if holding { holdReasons.remove(reason) } else { holdReasons.insert(reason) }
            return []
        case .answerSent, .ackArrived, .timerFired(.answerResend), .timerFired(.ackWait):
            return handleAckWait(input, at: now)
        case .peerAllows(let methods):
            guard !methods.isEmpty else { return [] }
            peerAllowsUpdate = methods.contains { $0.trimmingSIPWhitespace().uppercased() == "UPDATE" }
            return []
        }
    }

    /// The phase a confirmed call is in: held when this end holds it, else remotely held when
    /// the far end's description in force receives nothing from us (`remoteHoldsUs`).
    func confirmedPhase(remoteHoldsUs: Bool) -> CallPhase {
        if !holdReasons.isEmpty { return .held }
        return remoteHoldsUs ? .remotelyHeld : .active
    }

    /// §14.2: "A UAS that receives an INVITE on a dialog while an INVITE it had sent on that
    /// dialog is in progress MUST return a 491 (Request Pending) response to the received
    /// INVITE"; a second INVITE while one of theirs is open gets 500 with `Retry-After` (0–10 s).
    /// RFC 3311 §5.2 says the same of an UPDATE against any pending offer: "the UAS has generated
    /// an offer ... to which it has not yet received an answer". An offer of ours already refused
    /// (its 491 came, `ourOfferRefused`) is no longer pending: the far end's is answered, and the
    /// answer's slot is theirs; our retry (after its glare wait) waits for it.
    private mutating func remoteOffer(method: String, ourOfferRefused: Bool) -> [CallAction] {
        switch offerSlot {
        case .ours where ourOfferRefused:
            offerSlot = .theirs(method: method)
            return [.answerOffer]
        case .ours: return [.refuseOffer(status: 491, reason: "Request Pending", retryAfter: nil)]
        case .theirs:
            return [.refuseOffer(status: 500, reason: "Server Internal Error", retryAfter: Int.random(in: 0...10))]
        case .idle, .glareWait:
            // Our glare wait is no pending offer: the far end's offer is answered, and our retry
            // waits until the slot is free again.
            offerSlot = .theirs(method: method)
            return [.answerOffer]
        }
    }

    /// RFC 3891: an early dialog is replaced in place when the far end supports `Replaces` and
    /// gave its tag in a provisional (`early-only`: never a confirmed dialog); otherwise the old
    /// INVITE is CANCELled and a new one rings (the callee sees a second call).
    private mutating func earlyFlowLost(_ dialog: Dialog.ID) -> [CallAction] {
        guard phase == .progressing else { return [] }
        defer { earlyRemoteTag = nil }  // the next INVITE's early dialog is another one
        guard peerSupportsReplaces, let remote = earlyRemoteTag else { return [.ringAgain(replaces: nil)] }
        // The UAS matches to-tag with its own (local) tag and from-tag with ours (§3).
        return [.ringAgain(replaces: "\(dialog.callID);to-tag=\(remote);from-tag=\(dialog.localTag);early-only")]
    }

    /// The survival budget (``CallSurvival``): a call that lived through a loss longer than the
    /// budget ends (its BYE goes when confirmed); otherwise it is recovered with the downtime it
    /// lived through, once per loss.
    private mutating func pathReturned(loss: Range<ContinuousClock.Instant>?, budget: Duration) -> [CallAction] {
        guard phase != .ended else { return [] }
        if let downtime = CallSurvival.exceeded(
            loss: loss, createdAt: createdAt, survivedUntil: survivedUntil, budget: budget)
        {
            survivedUntil = loss?.upperBound
            return [.end(trigger: "outage", reason: "outage", downtime: downtime)]
        }
        let downtime = CallSurvival.downtime(of: loss, createdAt: createdAt, survivedUntil: survivedUntil)
        if downtime != nil { survivedUntil = loss?.upperBound }
        return [.recover(downtime: downtime)]
    }
}

extension SIPMessage {
    /// Whether the far end lists `replaces` in `Supported` or `Allow` (RFC 3891 §4: a UA that
    /// supports Replaces says so in `Supported`; some list it in `Allow`).
    var offersReplaces: Bool {
        (headers.listValues("Supported") + headers.listValues("Allow")).contains {
            $0.trimmingSIPWhitespace().lowercased() == "replaces"
        }
    }
}
