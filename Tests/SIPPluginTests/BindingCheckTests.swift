import Foundation
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The decision value alone, on a ManualClock: when a due flow ping becomes a binding query, and
/// what the registrar's answer to one means.
struct BindingCheckTests {
    let interval = Duration.seconds(30)

    /// A check whose binding a 2xx confirmed at `clock`'s now.
    func confirmed(on clock: ManualClock) -> BindingCheck {
        var check = BindingCheck()
        check.confirmed(at: clock.now)
        return check
    }

    @Test func anAccountNotKnownToBeBoundIsOnlyKeptAlive() {
        let clock = ManualClock()
        let check = BindingCheck()
        clock.advance(by: .seconds(3600))
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .keepAlive)
    }

    @Test func everyPingOfTheAccountsOwnIntervalIsAQueryEvenAtTheJittersEarliest() {
        let clock = ManualClock()
        let check = confirmed(on: clock)
        // RFC 5626 §4.4.1: pings come at 80–100 % of the interval; the earliest must query too,
        // or a lost binding could go unseen for almost two intervals.
        clock.advance(by: interval * 8 / 10)
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .queryBindings)
    }

    @Test func pingsFarShorterThanTheAccountsIntervalQueryOnlyEveryFewPings() {
        let clock = ManualClock()
        var check = confirmed(on: clock)
        var probes: [BindingCheck.Probe] = []
        // A registrar's Flow-Timer of 10 s against the account's 30 s.
        for _ in 0..<6 {
            clock.advance(by: .seconds(10))
            let probe = check.probe(at: clock.now, flowPingInterval: interval)
            probes.append(probe)
            if probe == .queryBindings {
                #expect(
                    check.handle(listed: ["a@198.18.0.2:5060"], current: "a@198.18.0.2:5060", at: clock.now) == .bound)
            }
        }
        #expect(probes == [.keepAlive, .keepAlive, .queryBindings, .keepAlive, .keepAlive, .queryBindings])
    }

    @Test func withFlowPingsOffNothingIsQueried() {
        let clock = ManualClock()
        let check = confirmed(on: clock)
        clock.advance(by: .seconds(86_400))
        #expect(check.probe(at: clock.now, flowPingInterval: nil) == .keepAlive)
    }

    @Test func anAnswerWithoutTheCurrentContactIsALostBindingAndStopsFurtherQueries() {
        let clock = ManualClock()
        var check = confirmed(on: clock)
        clock.advance(by: interval)
        // Another device's binding of the same address of record does not count as ours.
        let verdict = check.handle(listed: ["a@198.18.0.9:5060"], current: "a@198.18.0.2:5060", at: clock.now)
        #expect(verdict == .lost)
        clock.advance(by: interval)
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .keepAlive)
        check.confirmed(at: clock.now)
        clock.advance(by: interval)
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .queryBindings)
    }

    @Test func aListedBindingIsConfirmedAndTrustedForThreeQuartersOfTheInterval() {
        let clock = ManualClock()
        var check = confirmed(on: clock)
        clock.advance(by: interval)
        #expect(check.handle(listed: ["a@198.18.0.2:5060"], current: "a@198.18.0.2:5060", at: clock.now) == .bound)
        clock.advance(by: .seconds(22))
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .keepAlive)
        clock.advance(by: .seconds(1))
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .queryBindings)
    }

    @Test func unregisteringForgetsTheConfirmation() {
        let clock = ManualClock()
        var check = confirmed(on: clock)
        check.forget()
        clock.advance(by: interval)
        #expect(check.probe(at: clock.now, flowPingInterval: interval) == .keepAlive)
    }
}
