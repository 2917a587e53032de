internal import ResilienceCore
internal import Synchronization

/// Admits one registrar's REGISTER transactions through a ``PacingWindow``, shared by every
/// account that registers there (one per registrar host, port and transport).
///
/// Invariants: every `admit(clock:)` that returns is matched by exactly one `finish(_:)`;
/// waiters are admitted in arrival order as answers free the window, as many at a time as it
/// has room for (a woken waiter that finds the room taken goes back to the head of the queue);
/// a cancelled waiter leaves the queue at once (throwing `CancellationError`) and takes no slot.
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

    /// Callers queued for room now (for tests).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns when this registrar may get one more REGISTER transaction; the ceiling's spacing
    /// sleeps on `clock` (the runtime's, so no sleep bypasses its timers), once per caller: a
    /// caller the ceiling holds back reserves its slot and start instant before it sleeps.
    func admit(clock: any RuntimeClock) async throws {
        // Bounded: each pass either starts, reserves and sleeps until the ceiling allows, or waits
        // for an answer.
        var woken = false
        while true {
            try Task.checkCancellation()
            let decision = state.withLock { state -> PacingWindow.Decision in
                let now = clock.now
                // First come, first served: a newcomer does not overtake the queue (a woken
                // waiter left it already).
                guard woken || state.waiters.isEmpty else { return .full }
                let decision = state.window.decide(at: now)
                switch decision {
                case .start: state.window.start(at: now)
                // The slot and its instant are taken now, so the callers behind space out from
                // it: each sleeps once, to its own instant, instead of all waking for one start.
                case .wait(let until): state.window.start(at: until)
                case .full: break
                }
                return decision
            }
            switch decision {
            case .start: return
            case .wait(let until):
                do {
                    try await clock.sleep(until: until, tolerance: nil)
                } catch {
                    finish(.abandoned)
                    throw error
                }
                return
            case .full:
                try await waitForRoom(atHead: woken)
                woken = true
            }
        }
    }

    /// An admitted transaction ended.
    func finish(_ ending: PacingWindow.Ending) {
        let next = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.window.finish(ending)
            let count = min(state.window.room, state.waiters.count)
            defer { state.waiters.removeFirst(count) }
            return state.waiters.prefix(count).map(\.continuation)
        }
        for continuation in next { continuation.resume() }
    }

    /// Suspends until `finish(_:)` finds room for this caller; `atHead` for one that was woken
    /// already and lost the room to a newcomer, so it keeps its place in the queue.
    private func waitForRoom(atHead: Bool) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    // The window may have room already (an answer came meanwhile, or no one waits).
                    if state.window.room > 0, state.waiters.isEmpty { return true }
                    state.waiters.insert((id, continuation), at: atHead ? 0 : state.waiters.endIndex)
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
