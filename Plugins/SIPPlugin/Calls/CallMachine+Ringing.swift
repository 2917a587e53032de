/// The far end's INVITE ringing here: rung with 180 at once, answered or rejected by the app,
/// CANCELled by the far end, or ended 480 at the ringing timeout (RFC 3261 §13.3.1.1).
extension CallMachine {
    mutating func handleRinging(_ input: CallInput, at now: ContinuousClock.Instant) -> [CallAction] {
        switch input {
        case .ringing(let timeout):
            guard phase == .alerting else { return [] }
            let bounded = min(max(timeout, Self.ringingTimeoutRange.lowerBound), Self.ringingTimeoutRange.upperBound)
            ringingUntil = now + bounded
            return [.sendRinging, .report(report(trigger: "remote")), .arm(.ringing, at: now + bounded)]
        case .answer:
            guard ringingUntil != nil, let offer = theirs else { return [] }
            ringingUntil = nil
            return [.disarm(.ringing)] + describeAnswer(to: offer)
        case .reject(let status, let phrase):
            guard ringingUntil != nil else { return [] }
            ringingUntil = nil
            let code = min(max(status, 400), 699)
            return [.disarm(.ringing), .respondToInvite(status: code, reason: phrase)]
                + finish(trigger: "api", reason: "\(code)")
        case .cancelled:
            guard ringingUntil != nil else { return [] }
            ringingUntil = nil
            return [.disarm(.ringing)] + finish(trigger: "remote", reason: "CANCEL")
        case .timerFired(.ringing):
            // §13.3.1.1: a UAS that cannot answer "within a reasonable time" ends the INVITE;
            // 480 Temporarily Unavailable says the callee was not reachable now.
            guard phase == .alerting, let until = ringingUntil, now >= until else { return [] }
            ringingUntil = nil
            return [.note(.ringingTimedOut), .respondToInvite(status: 480, reason: "Temporarily Unavailable")]
                + finish(trigger: "timeout", reason: "480")
        default: return []
        }
    }
}
