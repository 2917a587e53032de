import NetworkLab
import ResilienceTesting
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

extension RegistrarPacerTests {
    /// A pacer with a window of one, held by the caller, and two waiters queued behind it in
    /// arrival order, on an executor that runs only when the test says so.
    private func twoQueuedWaiters() async throws -> (
        RegistrarPacer, ManualTaskExecutor, first: Task<Void, any Error>, second: Task<Void, any Error>
    ) {
        let pacer = RegistrarPacer(settings: .init(ceiling: 100_000, initialWindow: 1, maximumWindow: 8))
        let clock = ContinuousClock()
        try await pacer.admit(clock: clock)
        let executor = ManualTaskExecutor()
        let first = Task(executorPreference: executor) { try await pacer.admit(clock: clock) }
        #expect(executor.runUntilIdle())
        let second = Task(executorPreference: executor) { try await pacer.admit(clock: clock) }
        #expect(executor.runUntilIdle())
        #expect(pacer.waiting == 2)
        return (pacer, executor, first, second)
    }

    /// A waiter cancelled after `finish` handed it the room (it was resumed but had not run yet)
    /// must hand that room on: before, it threw at its next cancellation check with the queue
    /// behind it still parked and nothing in flight to wake it, ever.
    @Test func aWaiterCancelledAfterItWasHandedTheRoomHandsItOn() async throws {
        let (pacer, executor, first, second) = try await twoQueuedWaiters()
        // Nothing runs on the executor between these two lines: the first waiter is resumed and
        // cancelled before it takes another step.
        pacer.finish(.retransmitted)  // window stays 1, nothing in flight: room for one
        first.cancel()
        #expect(executor.runUntilIdle())
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(pacer.waiting == 0)
        #expect(pacer.window.inFlight == 1)  // the second one's, handed on
        second.cancel()  // ends the second task on the old code, where it stayed parked
        #expect(executor.runUntilIdle())
        try await second.value
        pacer.finish(.answered)
        #expect(pacer.window.inFlight == 0)
    }

    /// A waiter cancelled while queued leaves the queue and holds no slot; the one behind it gets
    /// the next room.
    @Test func aWaiterCancelledWhileQueuedTakesNoSlot() async throws {
        let (pacer, executor, first, second) = try await twoQueuedWaiters()
        first.cancel()
        #expect(executor.runUntilIdle())
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(pacer.waiting == 1)
        #expect(pacer.window.inFlight == 1)
        pacer.finish(.retransmitted)
        #expect(executor.runUntilIdle())
        try await second.value
        #expect(pacer.waiting == 0)
        #expect(pacer.window.inFlight == 1)
    }

    /// A caller the ceiling holds back (past the window's worth that leaves at once) holds its
    /// slot and its start instant while it sleeps, so the callers behind it space out from that
    /// instant (one sleep each, no herd); cancelled in its sleep, it gives the slot back.
    @Test func aCallerTheCeilingHoldsReservesItsSlotUntilItsInstant() async throws {
        let pacer = RegistrarPacer(settings: .init(ceiling: 10, initialWindow: 4, maximumWindow: 4))
        let clock = ManualClock()
        let t0 = clock.now
        for _ in 0..<4 { try await pacer.admit(clock: clock) }  // the window's worth, at once
        pacer.finish(.answered)
        pacer.finish(.answered)
        let executor = ManualTaskExecutor()
        let second = Task(executorPreference: executor) { try await pacer.admit(clock: clock) }
        let third = Task(executorPreference: executor) { try await pacer.admit(clock: clock) }
        #expect(executor.runUntilIdle())
        #expect(clock.sleeperCount == 2)
        #expect(pacer.window.inFlight == 4)
        #expect(pacer.waiting == 0)
        #expect(clock.nextDeadline == t0 + .milliseconds(100))
        third.cancel()
        #expect(executor.runUntilIdle())
        await #expect(throws: CancellationError.self) { try await third.value }
        #expect(pacer.window.inFlight == 3)
        clock.advance(by: .milliseconds(100))
        #expect(executor.runUntilIdle())
        try await second.value
        #expect(pacer.window.inFlight == 3)
    }
}
