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

extension CallMachine {
    /// What the survival budget made of a loss.
    enum SurvivalVerdict {
        /// The call lived through more than the budget: these actions end it (BYE when it is
        /// established) and complete the exchange that asked.
        case ended([CallAction])
        /// It goes on; `downtime` is the loss it lived through, when that loss is news to it.
        case survived(downtime: Duration?)
    }

    /// Judges `check` once for this call: each loss counts once, however many actions ask.
    mutating func judge(_ check: SurvivalCheck, completing id: ExchangeID) -> SurvivalVerdict {
        let budget = max(check.budget, .zero)
        if let downtime = CallSurvival.exceeded(
            loss: check.loss, createdAt: createdAt, survivedUntil: survivedUntil, budget: budget)
        {
            survivedUntil = check.loss?.upperBound
            let end = finish(trigger: "outage", reason: "outage", downtime: downtime, bye: isEstablished)
            return .ended(
                [.note(.outlivedBudget(downtime: downtime, budget: budget))] + end + [.completed(id, .succeeded)])
        }
        let downtime = CallSurvival.downtime(of: check.loss, createdAt: createdAt, survivedUntil: survivedUntil)
        if downtime != nil { survivedUntil = check.loss?.upperBound }
        return .survived(downtime: downtime)
    }
}
