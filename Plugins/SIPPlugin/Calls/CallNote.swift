internal import Logging
internal import ResilienceCore

/// Things the agent logs for a call.
enum CallNote: Hashable, Sendable {
    /// Our offer got 491: retried after `wait`.
    case glare(wait: Duration, method: String)
    /// The far end's offer does not parse or negotiate (answered 488).
    case badOffer(String)
    /// The far end's answer does not parse or match our offer (the old session stays).
    case badAnswer(String)
    /// The call lived through a loss longer than the survival budget: ended.
    case outlivedBudget(downtime: Duration, budget: Duration)
    /// A recovery is coalesced into the same offer the far end already accepted.
    case recoveryCoalesced
    /// A recovery waits for an offer in progress; `superseding`: ours is stale (CANCELled).
    case recoveryQueued(superseding: Bool)
    /// Our offer in progress did not end within 64×T1 (CANCELled).
    case offerStalled
    /// A ringing call is rung again with `Replaces` (RFC 3891).
    case earlyReplaces
    /// A ringing incoming call ended at its timeout (480).
    case ringingTimedOut
    /// Our 2xx to an INVITE was never ACKed (64×T1).
    case ackTimedOut
}

extension CallNote {
    /// How the agent logs this note of call `id`: its level, message and metadata, and whether
    /// a peer can provoke it at will (the agent's rate-limited log takes those).
    func line(call id: CallID) -> (level: Logger.Level, message: String, metadata: Logger.Metadata, bounded: Bool) {
        let call: Logger.Metadata = ["call": "\(id)"]
        func with(_ more: Logger.Metadata) -> Logger.Metadata { call.merging(more) { $1 } }
        switch self {
        case .glare(let wait, let method):
            return (.notice, "sip.call-glare", with(["wait": "\(wait)", "method": "\(method)"]), false)
        // Hostile input: rate-limited like the wire's warnings.
        case .badOffer(let why):
            return (.notice, "sip.call-bad-offer", ["error": "\(LogText.escaped(why, limit: 120))"], true)
        case .badAnswer(let why):
            return (.warning, "sip.call-bad-answer", with(["error": "\(LogText.escaped(why, limit: 120))"]), false)
        case .outlivedBudget(let downtime, let budget):
            return (
                .notice, "sip.call-outlived-budget", with(["downtime": "\(downtime)", "budget": "\(budget)"]), false
            )
        case .recoveryCoalesced: return (.info, "sip.call-reinvite-coalesced", call, false)
        case .recoveryQueued(let superseding):
            return (.notice, superseding ? "sip.call-reinvite-superseded" : "sip.call-reinvite-queued", call, false)
        case .offerStalled: return (.notice, "sip.call-offer-stalled", call, false)
        case .earlyReplaces: return (.notice, "sip.call-early-replaces", call, false)
        // Each forged INVITE that rings unanswered (or is answered and never ACKed) ends here:
        // rate-limited like the wire's warnings, so a flood of them is not a log flood.
        case .ringingTimedOut: return (.info, "sip.call-ringing-timeout", call, true)
        case .ackTimedOut: return (.notice, "sip.call-ack-timeout", call, true)
        }
    }
}
