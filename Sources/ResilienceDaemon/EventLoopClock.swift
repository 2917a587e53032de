import NIOConcurrencyHelpers
public import NIOCore
import NIOPosix
public import ResilienceCore

/// A ``RuntimeClock`` whose sleeps are timers of a SwiftNIO event loop, so a cancelled sleep
/// never wakes the process.
///
/// `Task.sleep` (and so `ContinuousClock.sleep`) hands its wake-up job to the global executor
/// with a deadline, and cancelling the sleeping task resumes it at once but leaves that job
/// armed: every cancelled timer still wakes the process when it falls due (an action's 30 s
/// timeout, a re-armed refresh timer). Here cancelling a sleep cancels its scheduled task on the
/// event loop, which removes it from the loop's timer heap.
///
/// Invariants:
/// - `now` is `ContinuousClock.now` (CLOCK_BOOTTIME), so deadlines compare with every other
///   instant in the runtime.
/// - A sleep returns at once when its deadline has passed; it throws `CancellationError` when its
///   task is (or was already) cancelled, and its timer is then gone.
/// - The loop's timers count CLOCK_MONOTONIC, which stands still while the machine is suspended:
///   a deadline that fell due during a suspension fires late by the time asleep. Each sleep is
///   therefore cut into slices of at most ``maximumSlice``, and the remaining time re-read from
///   CLOCK_BOOTTIME after each, so lateness after a suspension is bounded by one slice (the
///   manager's `app.resumed` on the next trigger refreshes what expired meanwhile).
public struct EventLoopClock: RuntimeClock {
    public typealias Instant = ContinuousClock.Instant

    /// The loop whose timers the sleeps are.
    public let eventLoop: any EventLoop
    /// The longest single timer (see the type's invariants).
    public let maximumSlice: Duration

    public init(eventLoop: any EventLoop, maximumSlice: Duration = .seconds(600)) {
        self.eventLoop = eventLoop
        self.maximumSlice = max(maximumSlice, .seconds(1))
    }

    /// A clock on one loop of NIO's singleton group (the one ``QuietConcurrencyRuntime`` makes
    /// the global executor), for code that has no loop of its own at hand.
    public static func onSingletonGroup() -> EventLoopClock {
        EventLoopClock(eventLoop: MultiThreadedEventLoopGroup.singleton.next())
    }

    public var now: Instant { .now }
    public var minimumResolution: Duration { .microseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        // Bounded: each slice is at least one second of CLOCK_BOOTTIME (or ends the sleep).
        while true {
            try Task.checkCancellation()
            let remaining = deadline - .now
            guard remaining > .zero else { return }
            try await sleepOnce(min(remaining, maximumSlice))
        }
    }

    /// One loop timer of `delay`; cancelling the task cancels the timer.
    private func sleepOnce(_ delay: Duration) async throws {
        let timer = ScheduledTimer()
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let scheduled = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {}
                scheduled.futureResult.whenComplete { result in
                    switch result {
                    case .success: continuation.resume()
                    case .failure: continuation.resume(throwing: CancellationError())
                    }
                }
                timer.hold(scheduled)
            }
        } onCancel: {
            timer.cancel()
        }
    }
}

/// A scheduled task that may be cancelled before it is known (the cancellation handler can run
/// first): whichever of ``hold(_:)`` and ``cancel()`` comes second cancels it.
private final class ScheduledTimer: Sendable {
    private enum State {
        case waiting
        case scheduled(Scheduled<Void>)
        case cancelled
    }
    private let state = NIOLockedValueBox(State.waiting)

    func hold(_ scheduled: Scheduled<Void>) {
        let cancelNow = state.withLockedValue { state -> Bool in
            guard case .waiting = state else { return true }
            state = .scheduled(scheduled)
            return false
        }
        if cancelNow { scheduled.cancel() }
    }

    func cancel() {
        let scheduled = state.withLockedValue { state -> Scheduled<Void>? in
            defer { state = .cancelled }
            guard case .scheduled(let scheduled) = state else { return nil }
            return scheduled
        }
        scheduled?.cancel()
    }
}
