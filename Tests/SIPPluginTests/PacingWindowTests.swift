import SIPPlugin
import Testing

struct PacingWindowTests {
    let t0 = ContinuousClock.now

    @Test func theWindowOpensOneByAnswerAndHalvesOnARetransmission() {
        var window = PacingWindow(settings: .init(ceiling: 100_000, initialWindow: 4, maximumWindow: 16))
        for i in 0..<4 {
            #expect(window.decide(at: t0 + .seconds(i)) == .start)
            window.start(at: t0 + .seconds(i))
        }
        #expect(window.decide(at: t0 + .seconds(10)) == .full)
        window.finish(.answered)
        #expect(window.window == 5)
        #expect(window.decide(at: t0 + .seconds(10)) == .start)
        for _ in 0..<40 { window.finish(.answered) }
        #expect(window.window == 16)
        window.finish(.retransmitted)
        #expect(window.window == 8)
        window.finish(.abandoned)
        #expect(window.window == 8)
        for _ in 0..<10 { window.finish(.retransmitted) }
        #expect(window.window == 1)
        #expect(window.inFlight == 0)
    }

    /// One window's worth leaves at once (the due refreshes of many accounts in one pass); past
    /// it, starts are spaced by the ceiling while anything is in flight.
    @Test func aWindowsWorthStartsAtOnceThenTheCeilingSpacesTheRest() {
        var window = PacingWindow(settings: .init(ceiling: 100, initialWindow: 4, maximumWindow: 4))
        for _ in 0..<4 {
            #expect(window.decide(at: t0) == .start)
            window.start(at: t0)
        }
        window.finish(.answered)
        #expect(window.decide(at: t0 + .milliseconds(1)) == .wait(until: t0 + .milliseconds(10)))
        window.start(at: t0 + .milliseconds(10))
        window.finish(.answered)
        #expect(window.decide(at: t0 + .milliseconds(11)) == .wait(until: t0 + .milliseconds(20)))
        #expect(window.decide(at: t0 + .milliseconds(20)) == .start)
        // Nothing in flight: everything was answered, the next goes at once.
        for _ in 0..<3 { window.finish(.answered) }
        #expect(window.decide(at: t0 + .milliseconds(12)) == .start)
        window.start(at: t0 + .milliseconds(12))
        #expect(window.decide(at: t0 + .milliseconds(12)) == .start)
    }

    @Test(arguments: [(0, 1), (-5, 1), (1_000_000, 100_000)])
    func settingsAreClamped(ceiling: Int, expected: Int) {
        #expect(PacingWindow.Settings(ceiling: ceiling, initialWindow: 500, maximumWindow: 0).ceiling == expected)
        #expect(PacingWindow.Settings(initialWindow: 500, maximumWindow: 0).initialWindow == 1)
    }
}
