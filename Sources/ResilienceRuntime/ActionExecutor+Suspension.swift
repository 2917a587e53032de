public import ResilienceCore

/// What a suspended app holds: a suspended client wakes for nothing but a push.
///
/// Invariants:
/// - While suspended, an action decided before the suspension (a retry in backoff, an action
///   waiting for its prerequisite) of a service not kept awake is held: no retry timer is armed
///   for it and it reaches no plugin. An action already running goes on to its outcome (bounded
///   by the action timeout); its retry is held.
/// - Actions the rules decide while suspended (a push's `register`, a rule a policy gives
///   `when: [suspended]`) are what the policy keeps alive: they run, and so do their retries.
///   A newer decision replaces held work like any pending work (`superseded`).
/// - Services kept awake (the manager's: a push-woken account's, an account's with a call) are
///   never held; when a service joins them, its held work starts at once. When it leaves them
///   (the wake window ended), the work decided before then is held again, like at the suspension.
/// - On waking (``setSuspended(_:keepingAwake:then:epoch:)`` with `false`) every held action is
///   due at once (a retry keeps its backoff exponent); the path's own hold still applies.
extension ActionExecutor {
    /// Suspended: the batches decided before the suspension and the services kept awake.
    struct SuspensionHold {
        /// Batches numbered up to this one were decided before the app was suspended.
        var lastBatchBefore: UInt64
        var awake: Set<ServiceID>
        /// Services that were kept awake while suspended and no longer are, with the last batch
        /// decided before they fell asleep again (a push's wake window ended).
        var asleepAgain: [ServiceID: UInt64] = [:]

        /// Whether work of `service` from `batch` was decided before the service fell asleep.
        func holds(_ service: ServiceID, batch: UInt64) -> Bool {
            !awake.contains(service) && batch <= max(lastBatchBefore, asleepAgain[service] ?? 0)
        }
    }

    /// What one ``setSuspended(_:keepingAwake:then:epoch:)`` changed: the services whose next
    /// action it held, and those whose held action it released, each sorted.
    public struct SuspensionChange: Hashable, Sendable {
        public var held: [ServiceID]
        public var released: [ServiceID]

        public init(held: [ServiceID] = [], released: [ServiceID] = []) {
            self.held = held
            self.released = released
        }

        /// Nothing was held or released.
        public var isEmpty: Bool { held.isEmpty && released.isEmpty }
    }

    /// Reports the app's decided state: `suspended` holds the work decided before it except the
    /// `awake` services' (see the invariants above); `false` releases everything held.
    /// `actions` (the decision of the app event or push) are submitted after the hold is set
    /// and before anything is released, so they replace what they redo instead of racing it.
    @discardableResult
    public func setSuspended(
        _ suspended: Bool, keepingAwake awake: Set<ServiceID> = [], then actions: [PlannedAction] = [],
        epoch: NetworkEpoch
    ) -> SuspensionChange {
        let before = heldWhileSuspended()
        if suspended, var hold = suspension {
            for id in hold.awake.subtracting(awake) { hold.asleepAgain[id] = nextBatch }
            hold.awake = awake
            suspension = hold
        } else {
            suspension = suspended ? SuspensionHold(lastBatchBefore: nextBatch, awake: awake) : nil
        }
        submit(actions, epoch: epoch)
        let after = heldWhileSuspended()
        let released = before.subtracting(after)
        // Held: no timer; released: due at once. Either way the retry instant is gone.
        for id in after.subtracting(before).union(released) {
            guard var slot = slots[id], !slot.pending.isEmpty else { continue }
            slot.retryTimer?.cancel()
            slot.retryTimer = nil
            slot.pending[0].notBefore = nil
            slots[id] = slot
        }
        for id in released.sorted() { tryStart(id) }
        return SuspensionChange(held: after.subtracting(before).sorted(), released: released.sorted())
    }

    /// Shutdown while suspended: the held work would run only when the app wakes, which it will
    /// not now. It is reported `superseded` (by the shutdown decision) and dropped, so teardown
    /// does not wait for it; what runs or is not held is left alone.
    public func dropHeldWhileSuspended() {
        for id in heldWhileSuspended().sorted() {
            guard var slot = slots[id] else { continue }
            for queued in slot.pending { report(queued, .superseded) }
            slot.pending = []
            slot.retryTimer?.cancel()
            slot.retryTimer = nil
            store(slot, for: id)
        }
    }

    /// Whether an action waits for the suspended app to wake (see the invariants above).
    func isHeldWhileSuspended(_ queued: Queued) -> Bool {
        guard let suspension else { return false }
        return suspension.holds(queued.action.service, batch: queued.batch) && !isLocal(queued.action)
    }

    /// The services whose next action waits for the app to wake.
    private func heldWhileSuspended() -> Set<ServiceID> {
        guard suspension != nil else { return [] }
        return Set(
            active.filter { id in
                guard let slot = slots[id], slot.running == nil, let next = slot.pending.first else { return false }
                return isHeldWhileSuspended(next)
            })
    }
}
