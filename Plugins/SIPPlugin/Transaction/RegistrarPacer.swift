internal import ResilienceCore
internal import Synchronization

/// Admits one registrar's REGISTER transactions through a ``PacingWindow``, shared by every
/// account that registers there (one per registrar host, port and transport).
///
/// Invariants: every `admit(clock:)` that returns is matched by exactly one `finish(_:)`;
/// waiters are admitted in arrival order as answers free the window; a cancelled waiter leaves
/// the queue at once (throwing `CancellationError`) and takes no slot.
public final class RegistrarPacer: Sendable {
    private struct State {
        var window: PacingWindow
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
    }
    private let state: Mutex<State>

    public init(settings: PacingWindow.Settings) {
        state = Mutex(State(window: PacingWindow(settings: settings)))
    }

    /// The window now (for status and tests).
    var window: PacingWindow { state.withLock { $0.window } }

    /// Returns when this registrar may get one more REGISTER transaction; the ceiling's spacing
    /// sleeps on `clock` (the runtime's, so no sleep bypasses its timers).
    func admit(clock: any RuntimeClock) async throws {
        // Bounded: each pass either starts, sleeps until the ceiling allows, or waits for an answer.
        var woken = false
        while true {
            try Task.checkCancellation()
            let decision = state.withLock { state -> PacingWindow.Decision in
                let now = clock.now
                // First come, first served: a newcomer does not overtake the queue (a woken
                // waiter left it already).
                guard woken || state.waiters.isEmpty else { return .full }
                let decision = state.window.decide(at: now)
                if decision == .start { state.window.start(at: now) }
                return decision
            }
            switch decision {
            case .start: return
            case .wait(let until): try await clock.sleep(until: until, tolerance: nil)
            case .full:
                try await waitForRoom()
                woken = true
            }
        }
    }

    /// An admitted transaction ended.
    func finish(_ ending: PacingWindow.Ending) {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.window.finish(ending)
            guard state.window.inFlight < Int(state.window.window), !state.waiters.isEmpty else { return nil }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }

    private func waitForRoom() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    // The window may have room already (an answer came meanwhile, or no one waits).
                    if state.window.inFlight < Int(state.window.window), state.waiters.isEmpty { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }
}
