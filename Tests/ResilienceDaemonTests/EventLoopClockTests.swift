import NIOPosix
import ResilienceDaemon
import Testing

@Suite(.timeLimit(.minutes(3)))
struct EventLoopClockTests {
    let clock = EventLoopClock(eventLoop: MultiThreadedEventLoopGroup.singleton.next(), maximumSlice: .seconds(1))

    @Test func aSleepEndsNoEarlierThanItsDeadline() async throws {
        let deadline = clock.now + .milliseconds(30)
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
    }

    @Test func aDeadlineInThePastReturnsAtOnceAndAnEarlierCancellationThrows() async throws {
        try await clock.sleep(until: clock.now - .seconds(1))
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.now + .seconds(3600))
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }

    /// An hour's sleep (sliced into one-second timers) ends with `CancellationError` once its
    /// task is cancelled, without waiting for the timer: the time limit is the hang guard.
    @Test func cancellingASleepEndsItWithCancellationError() async throws {
        let sleeper = Task { try await clock.sleep(until: clock.now + .seconds(3600)) }
        try await Task.sleep(for: .milliseconds(50))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
