import NetworkLab
import Synchronization
import Testing

@testable import SIPPlugin

/// How many callers the pacer let through (shared with the tasks that wait in it).
private final class AdmittedCount: Sendable {
    let value = Atomic<Int>(0)
}

struct RegistrarPacerTests {
    /// An answer both ends a transaction and widens the window, so it frees two slots: both
    /// queued callers must go (with one woken per answer, the transactions in flight would
    /// never exceed the initial window, which held 1,000 accounts at ~1,400 REGISTERs/s).
    @Test func anAnswerThatWidensTheWindowAdmitsAsManyWaitersAsItHasRoomFor() async throws {
        let pacer = RegistrarPacer(settings: .init(ceiling: 100_000, initialWindow: 1, maximumWindow: 8))
        let clock = ContinuousClock()
        try await pacer.admit(clock: clock)
        let admitted = AdmittedCount()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await pacer.admit(clock: clock)
                    admitted.value.add(1, ordering: .sequentiallyConsistent)
                }
            }
            // Hang guards only: the waiters queue, then the answers let them go.
            #expect(await eventually(within: .seconds(30)) { pacer.waiting == 3 })
            #expect(admitted.value.load(ordering: .sequentiallyConsistent) == 0)
            pacer.finish(.answered)  // window 1 → 2, nothing in flight: room for two
            #expect(
                await eventually(within: .seconds(30)) { admitted.value.load(ordering: .sequentiallyConsistent) == 2 })
            #expect(pacer.waiting == 1)
            #expect(pacer.window.inFlight == 2)
            pacer.finish(.retransmitted)  // window 2 → 1 with one in flight: no room
            #expect(pacer.waiting == 1)
            pacer.finish(.answered)  // window 1 → 2, nothing in flight: the last one goes
            try await group.waitForAll()
        }
        #expect(admitted.value.load(ordering: .sequentiallyConsistent) == 3)
        #expect(pacer.window.inFlight == 1)
        #expect(pacer.window.window == 2)
    }
}
