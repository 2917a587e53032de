import ResilienceCore

/// The one timer of an actor that keeps a single deadline (the wake-up scheduler, the
/// manager's flow-loss release).
///
/// Invariants: at most one sleeping task; arming the deadline already armed keeps it, arming
/// another (or nil) cancels the old task first; a fire counts only when ``claim(_:)`` finds its
/// instant still armed, so a sleeper that lost a race with a re-arm does nothing.
struct DeadlineTimer {
    /// The armed deadline; nil when disarmed.
    private(set) var deadline: ContinuousClock.Instant?
    private var task: Task<Void, Never>?

    /// Arms for `next` (nil disarms). Once `clock` reaches it, `fire` gets the instant; the owner
    /// calls ``claim(_:)`` with it before acting.
    mutating func arm(
        _ next: ContinuousClock.Instant?, on clock: any RuntimeClock,
        fire: @escaping @Sendable (ContinuousClock.Instant) async -> Void
    ) {
        guard next != deadline else { return }
        task?.cancel()
        deadline = next
        task = next.map { next in
            Task {
                guard (try? await clock.sleep(until: next, tolerance: nil)) != nil else { return }
                await fire(next)
            }
        }
    }

    /// Cancels the armed task, if any.
    mutating func disarm() {
        task?.cancel()
        task = nil
        deadline = nil
    }

    /// True, and disarmed, when `instant` is the armed deadline: the fire is current.
    mutating func claim(_ instant: ContinuousClock.Instant) -> Bool {
        guard deadline == instant else { return false }
        task = nil
        deadline = nil
        return true
    }
}

extension RuntimeClock {
    /// Runs `work` until it returns or `deadline` passes on this clock, whichever comes first,
    /// and returns true when `work` returned first. Returns by the deadline even when `work`
    /// ignores cancellation: `work` is cancelled then, and not waited for.
    func finishes(until deadline: Instant, _ work: @escaping @Sendable () async -> Void) async -> Bool {
        let (outcomes, outcome) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(2))
        let worker = Task {
            await work()
            outcome.yield(!Task.isCancelled)
        }
        let timer = Task {
            try? await self.sleep(until: deadline, tolerance: nil)
            outcome.yield(false)
        }
        var first = false
        for await finished in outcomes {
            first = finished
            break
        }
        worker.cancel()
        timer.cancel()
        outcome.finish()
        return first
    }
}
