import ResilienceCore
import Testing

/// Hold-down rules with a manual clock: every instant is `t0 + offset`.
struct NetworkPathTrackerTests {
    let t0 = ContinuousClock.now
    var offline: NetworkSnapshot {
        var s = Fixture.online()
        s.links[2] = Fixture.link(2, carrier: false)
        return s
    }

    func kinds(_ step: NetworkPathTracker.Step) -> [PathTransition.Kind] { step.transitions.map(\.kind) }

    @Test func theFirstUpdateIsInitialEvenWhenOffline() {
        var tracker = NetworkPathTracker(holdDown: .seconds(2))
        #expect(kinds(tracker.update(offline, at: t0)) == [.initial])
        #expect(kinds(tracker.update(offline, at: t0 + .seconds(5))) == [])
        #expect(kinds(tracker.update(Fixture.online(), at: t0 + .seconds(7))) == [.restored(downtime: .seconds(7))])
    }

    @Test func aLossWaitsForTheHoldDownAndAsksForOneTimer() {
        var tracker = NetworkPathTracker(holdDown: .seconds(2))
        _ = tracker.update(Fixture.online(), at: t0)
        let step = tracker.update(offline, at: t0 + .seconds(1))
        #expect(step.transitions.isEmpty)
        #expect(step.deadline == t0 + .seconds(3))
        #expect(kinds(tracker.advance(to: t0 + .milliseconds(2999))) == [])
        #expect(kinds(tracker.advance(to: t0 + .seconds(3))) == [.lost(.noCarrier)])
        #expect(tracker.deadline == nil)
        let back = tracker.update(Fixture.online(), at: t0 + .seconds(4))
        #expect(kinds(back) == [.restored(downtime: .seconds(3))])
    }

    @Test func aZeroHoldDownReportsAtOnce() {
        var tracker = NetworkPathTracker(holdDown: .zero)
        _ = tracker.update(Fixture.online(), at: t0)
        let step = tracker.update(offline, at: t0 + .seconds(1))
        #expect(kinds(step) == [.lost(.noCarrier)])
        #expect(step.deadline == nil)
    }

    @Test func aFlapStormInsideTheWindowYieldsNoLoss() {
        var tracker = NetworkPathTracker(holdDown: .seconds(2))
        _ = tracker.update(Fixture.online(), at: t0)
        var all: [PathTransition.Kind] = []
        for i in 0..<50 {
            all += kinds(tracker.update(offline, at: t0 + .milliseconds(10 * i)))
            all += kinds(tracker.update(Fixture.online(), at: t0 + .milliseconds(10 * i + 5)))
        }
        all += kinds(tracker.advance(to: t0 + .seconds(10)))
        #expect(all.isEmpty)
        #expect(tracker.deadline == nil)
    }

    @Test func aReturnWithAnotherAddressInsideTheWindowIsOnlyAChange() {
        var tracker = NetworkPathTracker(holdDown: .seconds(2))
        _ = tracker.update(Fixture.online(), at: t0)
        _ = tracker.update(offline, at: t0 + .seconds(1))
        let back = tracker.update(Fixture.online(address: "198.18.0.7"), at: t0 + .seconds(2))
        #expect(kinds(back) == [.changed(.address)])
        #expect(back.transitions.first?.previous?.addresses == [Fixture.v4(2)])
    }

    @Test func adminDownAndRemovalOfThePrimaryCountAtOnce() {
        var tracker = NetworkPathTracker(holdDown: .seconds(30))
        _ = tracker.update(Fixture.online(), at: t0)
        var down = Fixture.online()
        down.links[2] = Fixture.link(2, up: false)
        #expect(kinds(tracker.update(down, at: t0 + .seconds(1))) == [.lost(.adminDown)])

        var other = NetworkPathTracker(holdDown: .seconds(30))
        _ = other.update(Fixture.online(), at: t0)
        #expect(kinds(other.update(offline, at: t0 + .seconds(1))) == [])
        #expect(kinds(other.update(.empty, at: t0 + .seconds(2))) == [.lost(.linkRemoved)])
        let back = other.update(Fixture.online(), at: t0 + .seconds(4))
        #expect(kinds(back) == [.restored(downtime: .seconds(3))])
    }

    @Test func changesWhileSatisfiedAreClassified() {
        var tracker = NetworkPathTracker(holdDown: .seconds(2))
        _ = tracker.update(Fixture.online(), at: t0)
        #expect(kinds(tracker.update(Fixture.online(metric: 7), at: t0)) == [.changed(.defaultRoute)])
        let both = Fixture.merged(Fixture.online(metric: 7), Fixture.online(3, address: "198.18.1.2", metric: 1))
        #expect(kinds(tracker.update(both, at: t0)) == [.changed(.interfaceSwitched)])
        #expect(kinds(tracker.update(both, at: t0)) == [])
    }

    @Test func lostAndRestoredAlternate() {
        var tracker = NetworkPathTracker(holdDown: .zero)
        var seen: [PathTransition.Kind] = []
        for i in 0..<6 {
            seen += kinds(tracker.update(i.isMultiple(of: 2) ? Fixture.online() : offline, at: t0 + .seconds(i)))
            seen += kinds(tracker.update(offline, at: t0 + .seconds(i)))
        }
        let nonInitial = seen.dropFirst()
        for (a, b) in zip(nonInitial, nonInitial.dropFirst()) {
            #expect(String(describing: a).prefix(4) != String(describing: b).prefix(4))
        }
    }
}
