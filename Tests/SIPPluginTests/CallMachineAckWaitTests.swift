import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The UAS's wait for the ACK of its 2xx as part of the call's value (``CallMachine``,
/// ``AckWait``) on a manual clock: the machine arms the timers and asks for the resends, the
/// agent only carries them out.
struct CallMachineAckWaitTests {
    let clock = ManualClock()
    let timers = SIPTimers()

    /// Runs the machine's armed timers in order on the manual clock until `limit` has passed;
    /// the actions of each firing, with its offset from the start.
    func run(_ call: inout CallMachine, from armed: [CallAction], for limit: Duration) -> [(Duration, CallAction)] {
        let start = clock.now
        var deadlines: [CallTimer: ContinuousClock.Instant] = [:]
        var seen: [(Duration, CallAction)] = []
        var actions = armed
        for _ in 0..<200 {
            for action in actions {
                switch action {
                case .arm(let timer, let at): deadlines[timer] = at
                case .disarm(let timer): deadlines[timer] = nil
                default: break
                }
            }
            guard let (timer, at) = deadlines.min(by: { $0.value < $1.value }), at <= start + limit else { break }
            deadlines[timer] = nil
            clock.advance(to: at)
            actions = call.handle(.timerFired(timer), at: clock.now)
            seen += actions.map { (clock.now - start, $0) }
        }
        return seen
    }

    @Test func without2xxsAckTheMachineResendsItDoublingToT2AndEndsTheCallAt64T1() {
        // RFC 3261 §13.3.1.4: "The 2xx response is passed to the transport with an interval that
        // starts at T1 seconds and doubles for each retransmission until it reaches T2 seconds";
        // "If the server retransmits the 2xx response for 64*T1 seconds without receiving an
        // ACK, the dialog is confirmed, but the session SHOULD be terminated."
        var call = CallScript.established(clock: clock).machine
        let armed = call.handle(.answerSent(cseq: 1, timers: timers), at: clock.now)
        #expect(
            armed == [
                .arm(.answerResend, at: clock.now + timers.t1), .arm(.ackWait, at: clock.now + timers.t1 * 64),
            ])
        #expect(call.ackWait?.cseq == 1)
        let fired = run(&call, from: armed, for: .seconds(60))
        let resends = fired.filter { $0.1 == .retransmitAnswer }.map(\.0)
        // T1 = 0.5 s doubling to T2 = 4 s: 0.5, 1.5, 3.5, 7.5, then every 4 s up to 31.5.
        #expect(resends == [0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5].map { Duration.seconds($0) })
        let ends = fired.filter { if case .end = $0.1 { true } else { false } }
        #expect(ends.count == 1 && ends.first?.0 == .seconds(32))
        #expect(ends.first?.1 == .end(trigger: "timeout", reason: "no ACK", downtime: nil))
        #expect(fired.contains { $0.1 == .disarm(.answerResend) }, "no resend is left armed after the give-up")
        #expect(fired.contains { $0.1 == .note(.ackTimedOut) } && call.phase == .ended)
        #expect(call.ackWait == nil)
    }

    @Test func theAckWithThe2xxsCSeqStopsResendsAndTheGiveUp() {
        // §13.3.1.4: "The server retransmits the 2xx response until it receives an ACK."
        var call = CallScript.established(clock: clock).machine
        let armed = call.handle(.answerSent(cseq: 7, timers: timers), at: clock.now)
        clock.advance(by: .seconds(2))
        #expect(call.handle(.ackArrived(cseq: 6), at: clock.now).isEmpty, "an ACK for another INVITE")
        #expect(call.ackWait?.cseq == 7)
        let stopped = call.handle(.ackArrived(cseq: 7), at: clock.now)
        #expect(stopped == [.disarm(.answerResend), .disarm(.ackWait)])
        #expect(call.ackWait == nil)
        // Timers that were already firing when the ACK came are ignored.
        #expect(call.handle(.timerFired(.answerResend), at: clock.now).isEmpty)
        clock.advance(by: .seconds(40))
        #expect(call.handle(.timerFired(.ackWait), at: clock.now).isEmpty, "no end after the ACK")
        #expect(run(&call, from: armed, for: .seconds(60)).isEmpty)
    }

    @Test func aNewer2xxReplacesTheWaitOfAnOlderOne() {
        var call = CallScript.established(clock: clock).machine
        _ = call.handle(.answerSent(cseq: 1, timers: timers), at: clock.now)
        clock.advance(by: .seconds(10))
        // A re-INVITE's 2xx (CSeq 2) before the first ACK: only its own ACK stops the wait.
        let armed = call.handle(.answerSent(cseq: 2, timers: timers), at: clock.now)
        #expect(
            armed == [.arm(.answerResend, at: clock.now + timers.t1), .arm(.ackWait, at: clock.now + .seconds(32))])
        #expect(call.handle(.ackArrived(cseq: 1), at: clock.now).isEmpty)
        #expect(call.handle(.ackArrived(cseq: 2), at: clock.now) == [.disarm(.answerResend), .disarm(.ackWait)])
    }

    @Test func anEndedCallWaitsForNoAck() throws {
        var ringing = try CallScript.ringing()
        _ = ringing.handle(.cancelled)
        var call = ringing.machine
        #expect(call.handle(.answerSent(cseq: 1, timers: timers), at: clock.now).isEmpty)
        #expect(call.ackWait == nil)
    }
}
