internal import Synchronization

/// The daemon's event stream for control-socket clients (`netres ctl events`, a plugin's hello
/// with `events`): each manager event as one JSON line, to every subscribed session.
///
/// Invariants: ``publish(_:)`` never waits for a subscriber: each session queues at most
/// ``ControlSession/outgoingCapacity`` lines and counts what a slow reader lost (a `dropped`
/// message in their place); a subscriber is listed until it unsubscribes; ``hasSubscribers``
/// lets the daemon skip rendering when nobody listens.
final class EventFeed: Sendable {
    private struct State {
        var next = 0
        var sessions: [Int: ControlSession] = [:]
    }

    private let state = Mutex(State())
    private let listening = Atomic<Int>(0)

    /// Adds `session`; returns the id to unsubscribe with.
    func subscribe(_ session: ControlSession) -> Int {
        state.withLock { state in
            state.next += 1
            state.sessions[state.next] = session
            listening.store(state.sessions.count, ordering: .releasing)
            return state.next
        }
    }

    func unsubscribe(_ id: Int) {
        state.withLock { state in
            state.sessions[id] = nil
            listening.store(state.sessions.count, ordering: .releasing)
        }
    }

    var hasSubscribers: Bool { listening.load(ordering: .acquiring) > 0 }

    /// Queues `line` for every subscriber.
    func publish(_ line: String) {
        let sessions = state.withLock { Array($0.sessions.values) }
        for session in sessions { session.send(line) }
    }
}
