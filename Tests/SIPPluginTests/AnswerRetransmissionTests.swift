import Testing

@testable import SIPPlugin

/// RFC 3261 §13.3.1.4: the UAS resends its 2xx until the ACK, and gives up at 64×T1.
struct AnswerRetransmissionTests {
    @Test func withoutAnAckThe2xxIsResentDoublingToT2ThenTheWaitTimesOutOnce() {
        var value = AnswerRetransmission(timers: SIPTimers())
        let start = ContinuousClock.now
        var armed: [AnswerRetransmission.Timer: ContinuousClock.Instant] = [:]
        var resends: [Duration] = []
        var timedOut = 0
        var actions = value.start(at: start)
        for _ in 0..<100 {
            for case .arm(let timer, let at) in actions { armed[timer] = at }
            timedOut += actions.filter { $0 == .ackTimedOut }.count
            guard let (timer, at) = armed.min(by: { $0.value < $1.value }), at <= start + .seconds(60) else { break }
            armed[timer] = nil
            actions = value.timerFired(timer, at: at)
            if actions.contains(.resend) { resends.append(at - start) }
        }
        // T1 = 0.5 s doubling to T2 = 4 s: 0.5, 1.5, 3.5, 7.5, then every 4 s up to 31.5; give up at 32.
        #expect(resends == [0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5].map { Duration.seconds($0) })
        #expect(timedOut == 1 && !value.waiting)
    }

    @Test func theAckStopsResendsAndTheTimeout() {
        var value = AnswerRetransmission(timers: SIPTimers())
        let start = ContinuousClock.now
        _ = value.start(at: start)
        #expect(value.timerFired(.resend, at: start + .seconds(0.5)).contains(.resend))
        value.ackReceived()
        #expect(value.timerFired(.resend, at: start + .seconds(1.5)).isEmpty)
        #expect(value.timerFired(.giveUp, at: start + .seconds(32)).isEmpty, "no BYE advice after the ACK")
    }
}
