public import ResilienceCore
import Synchronization

/// A clock that moves only when a test tells it to, so runtime tests never sleep for real.
///
/// Instants are `ContinuousClock` instants (the runtime's `RuntimeClock`), starting at the
/// moment the clock is created. Invariants:
/// - `now` never goes backwards; it changes only in ``advance(by:)`` and ``advance(to:)``.
/// - A sleeper whose deadline has passed returns at once; otherwise it is resumed by the advance
///   that reaches its deadline, earlier deadlines first. A cancelled sleeper throws
///   `CancellationError` and is forgotten.
/// - ``wakeUps`` counts sleepers resumed by advancing: the timer fires a real clock would cause.
///
/// ```swift
/// let clock = ManualClock()
/// let executor = ActionExecutor(plugins: [plugin], clock: clock)
/// await clock.waitForSleepers(count: 1)   // a retry timer is armed
/// clock.advance(by: .seconds(2))          // and fires, without waiting two seconds
/// ```
public final class ManualClock: RuntimeClock {
    public typealias Instant = ContinuousClock.Instant
    public typealias Duration = Swift.Duration

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now: Instant
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var sleeperWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var wakeUps = 0
    }
    private let state: Mutex<State>

    public init(now: Instant = ContinuousClock.now) {
        state = Mutex(State(now: now))
    }

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// Number of tasks currently sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }
    /// The earliest deadline anyone sleeps until, if anyone sleeps.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }
    /// Sleepers resumed by advancing the clock so far.
    public var wakeUps: Int { state.withLock { $0.wakeUps } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome {
                    continuation.resume(with: outcome)
                } else {
                    resumeSleeperWaiters()
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and resumes every sleeper whose deadline is reached.
    public func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    /// Moves the clock to `instant` (never backwards) and resumes every sleeper whose deadline
    /// is reached, earliest first.
    public func advance(to instant: Instant) {
        let due = state.withLock { state in
            if instant > state.now { state.now = instant }
            let now = state.now
            let ready = state.sleepers.filter { $0.value.deadline <= now }
                .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in ready { state.sleepers.removeValue(forKey: id) }
            state.wakeUps += ready.count
            return ready.map(\.value.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Returns once at least `count` tasks sleep on this clock (a timer was armed).
    public func waitForSleepers(count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                guard state.sleepers.count < count else { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func resumeSleeperWaiters() {
        let ready = state.withLock { state in
            let count = state.sleepers.count
            let ready = state.sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
            state.sleeperWaiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
