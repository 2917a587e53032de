internal import ResilienceCore
internal import Synchronization

/// The clock an agent's timers run on: the one the runtime last lent through
/// ``ResilienceCore/PluginContext/clock`` (a `ManualClock` in tests), `ContinuousClock` until then.
///
/// Invariant: every reading and every new sleep goes to the clock lent last; a sleep already
/// started stays on the clock it started on.
final class LentClock: RuntimeClock {
    typealias Instant = ContinuousClock.Instant
    typealias Duration = Swift.Duration

    private let current: Mutex<any RuntimeClock>

    init(_ clock: any RuntimeClock = ContinuousClock()) { current = Mutex(clock) }

    /// Switches to `clock` for what follows.
    func lend(_ clock: any RuntimeClock) { current.withLock { $0 = clock } }

    var now: Instant { current.withLock { $0 }.now }

    var minimumResolution: Duration { current.withLock { $0 }.minimumResolution }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let clock = current.withLock { $0 }
        try await clock.sleep(until: deadline, tolerance: tolerance)
    }
}
