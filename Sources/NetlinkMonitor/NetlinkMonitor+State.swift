import Logging
import ResilienceCore
import Synchronization

extension NetlinkMonitor {
    /// Everything the reader thread and callers share, guarded by the monitor's mutex.
    struct State: Sendable {
        enum Phase: Sendable { case idle, starting, running, stopped }

        var phase = Phase.idle
        var startContinuation: CheckedContinuation<Void, any Error>?
        var snapshot = NetworkSnapshot.empty
        var tracker: NetworkPathTracker
        var seq: UInt64 = 0
        var commands = Commands()
        var threadExited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var grantedBuffer: Int?
        var readerThreadID: Int32?

        /// Requests from callers to the reader thread, taken on each wake-up.
        struct Commands: Sendable {
            var stop = false
            var paused = false
            var pauseWaiters: [CheckedContinuation<Void, Never>] = []
            var dumpChecks: [CheckedContinuation<DumpCheck, any Error>] = []
        }
    }

    /// What the reader must do on this wake-up.
    struct TakenCommands: Sendable {
        var stop: Bool
        var paused: Bool
        var dumpChecks: [CheckedContinuation<DumpCheck, any Error>]
    }

    // MARK: Called by the reader thread only.

    /// The initial dump is in: publish `.initial` and let `start()` return.
    func readerStarted(_ snapshot: NetworkSnapshot, grantedBuffer: Int, at now: ContinuousClock.Instant)
        -> ContinuousClock.Instant?
    {
        let (continuation, deadline) = state.withLock { state in
            state.phase = .running
            state.snapshot = snapshot
            state.grantedBuffer = grantedBuffer
            state.readerThreadID = ReaderThread.currentID()
            broadcast(state.tracker.update(snapshot, at: now).transitions)
            defer { state.startContinuation = nil }
            return (state.startContinuation, state.tracker.deadline)
        }
        continuation?.resume()
        return deadline
    }

    func readerFailed(_ error: NetlinkError) {
        logger.error("netlink monitor failed", metadata: ["error": "\(error)"])
        let continuation = state.withLock { state in
            defer { state.startContinuation = nil }
            return state.startContinuation
        }
        continuation?.resume(throwing: error)
    }

    /// Finishes every stream and wakes `shutdown()` callers.
    func readerExited() {
        // Finished under the lock (the broadcasts' own lock nests inside it, and their
        // `onTermination` takes only theirs), so no subscriber slips in between.
        let (state, waiters) = state.withLock { state in
            state.phase = .stopped
            state.threadExited = true
            eventStreams.finish()
            transitionStreams.finish()
            defer {
                state.exitWaiters = []
                state.commands.pauseWaiters = []
                state.commands.dumpChecks = []
            }
            return (state, state.exitWaiters)
        }
        for waiter in waiters + state.commands.pauseWaiters { waiter.resume() }
        for check in state.commands.dumpChecks { check.resume(throwing: NetlinkError.shutDown) }
    }

    /// Publishes one batch in order and feeds the tracker; returns the tracker's deadline.
    func publish(
        _ kinds: [(kind: NetworkEvent.Kind, synthesized: Bool)], snapshot: NetworkSnapshot,
        at now: ContinuousClock.Instant
    ) -> ContinuousClock.Instant? {
        let transitions = state.withLock { state in
            state.snapshot = snapshot
            for (kind, synthesized) in kinds {
                state.seq += 1
                let event = NetworkEvent(seq: state.seq, kind: kind, synthesized: synthesized, at: now)
                eventStreams.yield(event)
            }
            let transitions = state.tracker.update(snapshot, at: now).transitions
            broadcast(transitions)
            return (transitions, state.tracker.deadline)
        }
        log(transitions.0)
        return transitions.1
    }

    /// The hold-down timer fired.
    func fireTimer(at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let (transitions, deadline) = state.withLock { state in
            let transitions = state.tracker.advance(to: now).transitions
            broadcast(transitions)
            return (transitions, state.tracker.deadline)
        }
        log(transitions)
        return deadline
    }

    /// Publishes transitions to every `transitions()` subscriber; call with the lock held.
    private func broadcast(_ transitions: [PathTransition]) {
        for transition in transitions { transitionStreams.yield(transition) }
    }

    /// Takes pending commands; acknowledges a pause (the reader stops reading from here on).
    func takeCommands() -> TakenCommands {
        let (taken, pauses) = state.withLock { state in
            defer {
                state.commands.dumpChecks = []
                if state.commands.paused { state.commands.pauseWaiters = [] }
            }
            let taken = TakenCommands(
                stop: state.commands.stop, paused: state.commands.paused, dumpChecks: state.commands.dumpChecks)
            return (taken, state.commands.paused ? state.commands.pauseWaiters : [])
        }
        for waiter in pauses { waiter.resume() }
        return taken
    }

    private func log(_ transitions: [PathTransition]) {
        for transition in transitions {
            logger.info(
                "network path \(transition.kind)",
                metadata: ["interface.name": "\(transition.path.primaryInterface?.name ?? "-")"])
        }
    }
}
