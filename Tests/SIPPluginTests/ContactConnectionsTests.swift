import Testing

@testable import SIPPlugin

/// Which connections a Contact's stream listener keeps: none can be held closed by a stranger.
struct ContactConnectionsTests {
    let start = ContinuousClock.now

    func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test func aFullListenerEvictsTheConnectionIdleLongestNotTheNewOne() {
        var table = ContactConnections()
        for id in 1...ContactConnections.maximum {
            #expect(table.opened(id, source: "198.18.1.\(id % 16)", at: at(id)).isEmpty)
        }
        table.active(1, at: at(1_000))  // the oldest spoke lately: the second oldest is idle longest
        let evicted = table.opened(100, source: "198.18.2.1", at: at(1_001))
        #expect(evicted == [2])
        #expect(table.count == ContactConnections.maximum)
        #expect(table.isSilent(100) && !table.isSilent(2), "the new one is listed, the evicted one is not")
    }

    @Test func oneSourceHoldsAtMostItsShareAndEvictsOnlyItsOwn() {
        var table = ContactConnections()
        #expect(table.opened(1, source: "198.18.0.9", at: at(0)).isEmpty)
        for id in 2...(ContactConnections.perSource + 1) {
            #expect(table.opened(id, source: "198.18.0.66", at: at(id)).isEmpty)
        }
        let evicted = table.opened(50, source: "198.18.0.66", at: at(60))
        #expect(evicted == [2], "the squatter's own oldest, not the other source's older one")
        #expect(table.count == ContactConnections.perSource + 1)
    }

    @Test func aConnectionIsSilentUntilItCarriesSomething() {
        var table = ContactConnections()
        _ = table.opened(7, source: "198.18.0.9", at: at(0))
        #expect(table.isSilent(7))
        table.active(7, at: at(1))
        #expect(!table.isSilent(7))
        table.closed(7)
        #expect(!table.isSilent(7) && table.count == 0, "a closed connection is not closed again")
    }
}
