internal import ResilienceCore
internal import Synchronization

/// Admits one registrar's REGISTER transactions through a ``PacingWindow``, shared by every
/// account that registers there (one per registrar host, port and transport).
///
/// Invariants:
/// - every `admit(clock:)` that returns holds one slot of the window, and is matched by exactly
///   one `finish(_:)`; one that throws holds none (it gave its slot back);
/// - room is handed to waiters, not announced: `finish(_:)` takes the slot (and, under the
///   ceiling, the start instant) for each waiter it wakes, in arrival order, as many as the window
///   has room for, so no newcomer overtakes a woken waiter and no wake-up is spent on one that
///   finds the room gone;
/// - a waiter cancelled while queued leaves the queue at once (throwing `CancellationError`) and
///   takes no slot; one cancelled after its slot was handed to it gives the slot back through
///   `finish(.abandoned)`, which hands it on: a cancellation never loses a wake-up.
public final class RegistrarPacer: Sendable {
    /// What a waiter is handed: its slot, to start now or at the instant the ceiling allows.
    private enum Grant {
        case now
        case at(ContinuousClock.Instant)
    }

    private struct Waiter {
        let id: UInt64
        let clock: any RuntimeClock
        let continuation: CheckedContinuation<Grant, any Error>
    }

    private struct State {
        var window: PacingWindow
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0

        /// Takes a slot at `now` if the window has one: at once, or reserved with its start
        /// instant when the ceiling holds it back (so the callers behind space out from it, each
        /// sleeping once to its own instant instead of all waking for one start).
        mutating func take(at now: ContinuousClock.Instant) -> Grant? {
            switch window.decide(at: now) {
            case .start:
                window.start(at: now)
                return .now
            case .wait(let until):
                window.start(at: until)
                return .at(until)
            case .full:
                return nil
            }
        }
    }
    private let state: Mutex<State>

    public init(settings: PacingWindow.Settings) {
        state = Mutex(State(window: PacingWindow(settings: settings)))
    }

    /// The window now (for status and tests).
    var window: PacingWindow { state.withLock { $0.window } }

    /// Callers queued for room now (for tests).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns when this registrar may get one more REGISTER transaction, holding its slot; the
    /// ceiling's spacing sleeps on `clock` (the runtime's, so no sleep bypasses its timers).
    /// - Throws: `CancellationError` (or the clock's error) with no slot held.
    func admit(clock: any RuntimeClock) async throws {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        let grant = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant, any Error>) in
                let verdict = state.withLock { state -> Result<Grant, any Error>? in
                    // Checked under the lock: a cancellation handler that ran before the waiter
                    // was queued found nothing to remove, so the waiter must not queue at all.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    // First come, first served: a newcomer does not overtake the queue.
                    if state.waiters.isEmpty, let grant = state.take(at: clock.now) { return .success(grant) }
                    state.waiters.append(Waiter(id: id, clock: clock, continuation: continuation))
                    return nil
                }
                if let verdict { continuation.resume(with: verdict) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
        // The slot is held from here: every way out but returning gives it back.
        do {
            if case .at(let instant) = grant { try await clock.sleep(until: instant, tolerance: nil) }
            try Task.checkCancellation()
        } catch {
            finish(.abandoned)
            throw error
        }
    }

    /// An admitted transaction ended: its slot (and any the window grew by) goes to the waiters
    /// at the head of the queue.
    func finish(_ ending: PacingWindow.Ending) {
        let granted = state.withLock { state -> [(CheckedContinuation<Grant, any Error>, Grant)] in
            state.window.finish(ending)
            var granted: [(CheckedContinuation<Grant, any Error>, Grant)] = []
            // Bounded by the queue: each pass hands one waiter its slot, or stops.
            for waiter in state.waiters {
                guard let grant = state.take(at: waiter.clock.now) else { break }
                granted.append((waiter.continuation, grant))
            }
            state.waiters.removeFirst(granted.count)
            return granted
        }
        for (continuation, grant) in granted { continuation.resume(returning: grant) }
    }
}
