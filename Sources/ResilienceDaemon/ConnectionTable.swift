internal import NIOCore
internal import Synchronization

/// The control socket's open connections and when each last did something.
///
/// Invariants: after ``admit(_:cap:)`` at most `cap` connections are listed; when the table was
/// full, the unpinned one with the oldest activity was taken out and is returned for the caller
/// to close. A pinned connection (a session, ``pin(_:cap:)``) is never evicted, and at most
/// `cap` of them are pinned at once.
final class ConnectionTable: Sendable {
    private struct Entry {
        var channel: any Channel
        var lastActive: ContinuousClock.Instant
        var pinned = false
    }

    private struct State {
        var next = 0
        var entries: [Int: Entry] = [:]
        var evictions = 0
    }

    private let state = Mutex(State())

    /// Lists `channel`; returns its id, the channel evicted to stay within `cap` (if any) and how
    /// many were evicted so far.
    func admit(_ channel: any Channel, cap: Int) -> (id: Int, evicted: (any Channel)?, evictions: Int) {
        state.withLock { state in
            var evicted: (any Channel)?
            if state.entries.count >= cap,
                let oldest = state.entries.filter({ !$0.value.pinned })
                    .min(by: { $0.value.lastActive < $1.value.lastActive })
            {
                evicted = oldest.value.channel
                state.entries[oldest.key] = nil
                state.evictions += 1
            }
            state.next += 1
            state.entries[state.next] = Entry(channel: channel, lastActive: .now)
            return (state.next, evicted, state.evictions)
        }
    }

    /// Marks connection `id` a session, kept until it ends; false when `cap` sessions are
    /// open already (the caller refuses it).
    func pin(_ id: Int, cap: Int) -> Bool {
        state.withLock { state in
            guard state.entries[id] != nil else { return false }
            guard state.entries.values.filter(\.pinned).count < cap else { return false }
            state.entries[id]?.pinned = true
            return true
        }
    }

    /// Records activity on connection `id`.
    func touch(_ id: Int) {
        state.withLock { $0.entries[id]?.lastActive = .now }
    }

    /// Forgets connection `id` (it has ended).
    func remove(_ id: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }
}
