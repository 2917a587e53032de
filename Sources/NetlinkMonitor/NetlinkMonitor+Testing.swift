public import ResilienceCore
import Synchronization

extension NetlinkMonitor {
    /// The cache and a fresh dump taken by the reader at the same moment (testing aid).
    public struct DumpCheck: Sendable {
        public var cache: NetworkSnapshot
        public var fresh: NetworkSnapshot
    }

    /// Testing hook: stop reading the event socket (the kernel keeps queueing, and overruns once
    /// the buffer is full). Returns once the reader has seen the request and will not read again
    /// until ``_resumeReading()``. The hold-down timer keeps running.
    public func _pauseReading() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state in
                state.commands.paused = true
                guard state.phase == .starting || state.phase == .running else { return false }
                state.commands.pauseWaiters.append(continuation)
                return true
            }
            if running { wakePipe.wake() } else { continuation.resume() }
        }
    }

    /// Testing hook: the reader thread's kernel thread id (`/proc/self/task/<id>`), once started,
    /// so tests can count its wake-ups.
    public var _readerThreadID: Int32? { state.withLock { $0.readerThreadID } }

    /// Testing hook: read again (an overrun is detected and resynced on the first read).
    public func _resumeReading() {
        state.withLock { $0.commands.paused = false }
        wakePipe.wake()
    }

    /// Testing hook: once everything queued has been read, the cache and a fresh dump taken by
    /// the reader thread back to back (in the monitor's namespace). In a quiet namespace the two
    /// must be equal.
    ///
    /// - Throws: ``NetlinkError`` when the dump fails or the monitor is not running.
    public func _cacheAndFreshDump() async throws -> DumpCheck {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DumpCheck, any Error>) in
            let running = state.withLock { state in
                guard state.phase == .starting || state.phase == .running else { return false }
                state.commands.dumpChecks.append(continuation)
                return true
            }
            if running { wakePipe.wake() } else { continuation.resume(throwing: NetlinkError.notStarted) }
        }
    }
}
