import ResilienceTesting
import Synchronization
import Testing

@testable import SIPPlugin

/// The binding queries of many accounts at one registrar, taken in turns, on a ManualClock: what
/// bounds their cost at short flow-ping intervals, and the alarm that keeps a forgetting
/// registrar noticed by all of them within one interval.
struct BindingQueryTurnsTests {
    let registrar = "198.18.0.10:5060"

    @Test func hundredAccountsPingingEveryTwoSecondsQueryTheRegistrarAtMostOncePerOneAndAHalfSeconds() {
        let clock = ManualClock()
        var turns = BindingQueryTurns()
        let interval = Duration.seconds(2)
        let markers = (0..<100).map { _ in Marker() }
        let accounts = markers.map(ObjectIdentifier.init)
        var queries: [ContinuousClock.Instant] = []
        // 100 accounts, each pinging every 2 s, their pings spread 20 ms apart: 5,000 pings in 100 s.
        for ping in 0..<5000 {
            clock.advance(by: .milliseconds(20))
            let account = accounts[ping % accounts.count]
            if turns.takeTurn(at: registrar, by: account, of: accounts.count, now: clock.now, interval: interval) {
                queries.append(clock.now)
            }
        }
        let gaps = zip(queries.dropFirst(), queries).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= .milliseconds(1500) })
        // One query per 1.5 s (67 in 100 s) instead of one per ping (5,000).
        #expect(queries.count == 67)
    }

    @Test func batchedPingsInTheSameOrderStillGiveEveryAccountItsTurnBeforeAnyHasASecond() {
        let clock = ManualClock()
        var turns = BindingQueryTurns()
        let accounts = (0..<5).map { _ in Marker() }
        var holders: [Int] = []
        // The runtime pings every account in one batch, always in the same order.
        for _ in 0..<10 {
            clock.advance(by: .seconds(2))
            for (index, account) in accounts.enumerated()
            where turns.takeTurn(
                at: registrar, by: ObjectIdentifier(account), of: accounts.count, now: clock.now, interval: .seconds(2))
            {
                holders.append(index)
            }
        }
        #expect(holders == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    }

    @Test func aLoneAccountStillQueriesAtEveryPingEvenAtTheJittersEarliest() {
        let clock = ManualClock()
        var turns = BindingQueryTurns()
        let interval = Duration.seconds(5)
        let account = Marker()
        // RFC 5626 §4.4.1: pings come at 80–100 % of the interval.
        for _ in 0..<10 {
            clock.advance(by: interval * 8 / 10)
            let granted = turns.takeTurn(
                at: registrar, by: ObjectIdentifier(account), of: 1, now: clock.now, interval: interval)
            #expect(granted)
        }
    }

    @Test func eachRegistrarHasTurnsOfItsOwn() {
        let clock = ManualClock()
        var turns = BindingQueryTurns()
        let markers = (Marker(), Marker())
        let (one, two) = (ObjectIdentifier(markers.0), ObjectIdentifier(markers.1))
        let first = turns.takeTurn(at: registrar, by: one, of: 2, now: clock.now, interval: .seconds(2))
        let another = turns.takeTurn(at: "198.18.0.11:5060", by: two, of: 2, now: clock.now, interval: .seconds(2))
        let again = turns.takeTurn(at: registrar, by: two, of: 2, now: clock.now, interval: .seconds(2))
        #expect(first && another && !again)
    }

    @Test func aLostBindingAlarmsEveryOtherAccountOfThatRegistrarOnceAndNoneOfAnother() {
        let clock = ManualClock()
        let watch = BindingWatch()
        let renewed = Mutex<[Int]>([])
        let accounts = (0..<4).map { _ in Marker() }
        for (index, account) in accounts.enumerated() {
            let at = index == 3 ? "198.18.0.11:5060" : registrar
            watch.listen(ObjectIdentifier(account), at: at) { renewed.withLock { $0.append(index) } }
        }
        let finder = ObjectIdentifier(accounts[0])
        #expect(watch.bindingLost(by: finder, at: registrar, now: clock.now, interval: .seconds(5)) == 2)
        #expect(renewed.withLock { $0.sorted() } == [1, 2])
        // Their renewals may find more lost bindings: no second alarm within the interval's 3/4.
        clock.advance(by: .seconds(3))
        #expect(
            watch.bindingLost(by: ObjectIdentifier(accounts[1]), at: registrar, now: clock.now, interval: .seconds(5))
                == 0)
        clock.advance(by: .seconds(1))
        watch.leave(ObjectIdentifier(accounts[2]))
        #expect(watch.bindingLost(by: finder, at: registrar, now: clock.now, interval: .seconds(5)) == 1)
        #expect(renewed.withLock { $0.sorted() } == [1, 1, 2])
    }

    /// Something with an identity, standing for an account.
    final class Marker: Sendable {}
}
