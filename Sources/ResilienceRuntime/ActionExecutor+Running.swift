import Logging
import ResilienceCore
import ResilienceRules

/// The executor's state machine: starting, finishing, retrying, holding and releasing actions.
///
/// Every mutation of a slot goes through ``store(_:for:)``, which keeps `active` (the non-idle
/// services) exact, lets services waiting on it re-check, and resumes idle waiters.
extension ActionExecutor {
    func replacePending(of id: ServiceID, with queued: [Queued]) {
        var slot = slots[id] ?? Slot()
        // A batch that only pings the flow never replaces other work of the service (a register
        // waiting for its retry, a running one): that work goes through the flow too, and a ping
        // that succeeded on a new flow would leave the service unbound while looking healthy.
        if queued.allSatisfy({ $0.action.kind == .pingFlow }), slot.hasWork(otherThan: .pingFlow) {
            for dropped in queued { report(dropped, .superseded) }
            return
        }
        for old in slot.pending { report(old, .superseded) }
        // A running action the new batch does again is working from stale facts (the address it
        // binds, a flow that may be gone): stop it so the new batch starts now, not when the old
        // attempt times out or answers.
        if let running = slot.running, let batch = queued.first?.batch, running.queued.batch < batch,
            queued.contains(where: { $0.action.kind == running.queued.action.kind })
        {
            stop(running, outcome: .superseded)
            slot.running = nil
        }
        slot.retryTimer?.cancel()
        slot.retryTimer = nil
        slot.pending = queued
        store(slot, for: id)
    }

    /// Whether the next action of a service must wait: for the path, or for the app to wake.
    func isHeld(_ queued: Queued) -> Bool { isHeldForPath(queued) || isHeldWhileSuspended(queued) }

    /// Whether an action must wait for the path: retries never run while it is unsatisfied, nor
    /// do actions decided before the loss; local actions are never held.
    func isHeldForPath(_ queued: Queued) -> Bool {
        !pathSatisfied && (queued.isRetry || queued.epoch < epoch) && !isLocal(queued.action)
    }

    /// Whether an action needs no network: a built-in local kind, or one its plugin declares local.
    func isLocal(_ action: PlannedAction) -> Bool {
        action.kind.isLocal || route(action)?.localActions.contains(action.kind) == true
    }

    /// Starts the service's next action if nothing runs, the path allows it, its retry time has
    /// come and its prerequisites are done (see `Slot.blocks`); otherwise arranges to be called again.
    ///
    /// An action that never reaches a plugin (no plugin performs it: failed, or skipped for an
    /// ``ResilienceCore/ActionKind/optionalSteps`` kind) ends at once, so the loop goes on with the
    /// service's next action: nothing queued behind it is left waiting for a call that never comes.
    /// Each turn removes one pending action, so the loop ends within the pending list's length.
    func tryStart(_ id: ServiceID) {
        while var slot = slots[id], slot.running == nil, let next = slot.pending.first {
            if isHeld(next) { return }  // networkChanged(restored) calls again
            let now = clock.now
            if let notBefore = next.notBefore, notBefore > now {
                if slot.retryTimer == nil {
                    slot.retryTimer = Task { [clock] in
                        guard (try? await clock.sleep(until: notBefore, tolerance: nil)) != nil else { return }
                        self.retryDue(id, at: notBefore)
                    }
                    slots[id] = slot
                }
                return
            }
            for prerequisite in next.action.after where prerequisite != id {
                if let other = slots[prerequisite], other.blocks(next) {
                    dependents[prerequisite, default: []].insert(id)
                    return
                }
            }
            slot.pending.removeFirst()
            slot.retryTimer = nil
            slot.running = start(next, at: now)
            store(slot, for: id)
        }
    }

    func retryDue(_ id: ServiceID, at instant: ContinuousClock.Instant) {
        guard var slot = slots[id], slot.pending.first?.notBefore == instant else { return }
        slot.retryTimer = nil
        slots[id] = slot
        tryStart(id)
    }

    /// The plugin that performs `action`: the first that answers ``ResiliencePlugin/performs(_:for:)``.
    func route(_ action: PlannedAction) -> (any ResiliencePlugin)? {
        plugins.first { $0.performs(action.kind, for: action.service) }
    }

    private func start(_ queued: Queued, at now: ContinuousClock.Instant) -> Running? {
        let action = queued.action
        guard let plugin = route(action) else {
            if action.kind.isOptionalStep {
                report(queued, .skipped, at: now)
            } else {
                report(
                    queued, .failed(PluginError.permanent("no plugin performs \(action.kind) for \(action.service)")),
                    at: now)
            }
            return nil
        }
        nextToken += 1
        let token = nextToken
        let deadline = now + configuration.actionTimeout
        var actionLogger = logger
        actionLogger[metadataKey: "plugin.id"] = "\(plugin.id)"
        actionLogger[metadataKey: "action.kind"] = "\(action.kind)"
        actionLogger[metadataKey: "service.id"] = "\(action.service)"
        actionLogger[metadataKey: "trigger"] = "\(action.trigger.name)"
        actionLogger[metadataKey: "epoch"] = "\(queued.epoch)"
        let context = PluginContext(
            logger: actionLogger, deadline: deadline, network: network, path: path, epoch: queued.epoch,
            attempt: queued.attempt, now: now, clock: clock, lastPathLoss: lastPathLoss,
            callSurvivalBudget: configuration.callSurvivalBudget)
        if queued.attempt == 1 {
            metrics.recordLatency(kind: action.kind, nanoseconds: (now - queued.submittedAt).nanoseconds)
        }
        report(queued, .started, at: now)
        let id = action.service
        let task = Task {
            do {
                try await plugin.perform(action, context: context)
                self.finished(id, token: token, error: nil)
            } catch {
                self.finished(id, token: token, error: error)
            }
        }
        let timer = Task { [clock] in
            guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
            self.timedOut(id, token: token)
        }
        return Running(queued: queued, token: token, task: task, timer: timer, startedAt: now)
    }

    func finished(_ id: ServiceID, token: UInt64, error: (any Error)?) {
        guard var slot = slots[id], let running = slot.running, running.token == token else { return }
        running.timer.cancel()
        slot.running = nil
        let now = clock.now
        metrics.recordDuration(kind: running.queued.action.kind, nanoseconds: (now - running.startedAt).nanoseconds)
        switch error {
        case nil:
            slot.failures = 0
            report(running.queued, .succeeded, at: now)
        case let error as PluginError where !error.isRetryable:
            report(running.queued, .failed(error), at: now)
        case is CancellationError:
            report(running.queued, .cancelled, at: now)
        case let error?:
            let pluginError = error as? PluginError ?? PluginError("\(error)")
            retry(running.queued, after: pluginError, in: &slot, at: now)
        }
        store(slot, for: id)
        tryStart(id)
    }

    func timedOut(_ id: ServiceID, token: UInt64) {
        guard var slot = slots[id], let running = slot.running, running.token == token else { return }
        running.task.cancel()
        slot.running = nil
        let now = clock.now
        report(running.queued, .timedOut, at: now)
        retry(running.queued, after: PluginError("timed out"), in: &slot, at: now)
        store(slot, for: id)
        tryStart(id)
    }

    /// Puts a failed action back in front of the pending list, unless a newer decision replaced
    /// the list meanwhile (then the failed action is superseded, not retried).
    private func retry(_ queued: Queued, after error: PluginError, in slot: inout Slot, at now: ContinuousClock.Instant)
    {
        if let next = slot.pending.first, next.batch != queued.batch {
            report(queued, .superseded, at: now)
            return
        }
        slot.failures += 1
        var again = queued
        again.attempt += 1
        again.isRetry = true
        if (pathSatisfied || isLocal(queued.action)) && !isHeldWhileSuspended(again) {
            if let asked = error.retryAfter, asked > configuration.backoff.maximum {
                logger.notice(
                    "retry-after capped at the backoff maximum",
                    metadata: [
                        "service.id": "\(queued.action.service)", "retry-after": "\(asked)",
                        "capped": "\(configuration.backoff.maximum)",
                    ])
            }
            let delay = configuration.backoff.retryDelay(
                afterFailures: slot.failures, retryAfter: error.retryAfter, using: &random)
            again.notBefore = now.adding(clamped: delay)
        } else {
            again.notBefore = nil
        }
        report(queued, .retrying(at: again.notBefore, error: error), at: now)
        slot.pending.insert(again, at: 0)
    }

    /// On loss: cancels running actions of older epochs and stops every retry timer, except those
    /// of local actions.
    func holdEverything(olderThan epoch: NetworkEpoch) {
        for id in Array(active) {
            guard var slot = slots[id] else { continue }
            if let running = slot.running, running.queued.epoch < epoch, !isLocal(running.queued.action) {
                stop(running, outcome: .cancelled)
                slot.running = nil
            }
            if let next = slot.pending.first, !isLocal(next.action) {
                slot.retryTimer?.cancel()
                slot.retryTimer = nil
                if next.isRetry { slot.pending[0].notBefore = nil }
            }
            store(slot, for: id)
        }
    }

    /// On restore: resets backoff and makes every held retry due now.
    func releaseHeld() {
        for id in active {
            guard var slot = slots[id] else { continue }
            slot.failures = 0
            if slot.pending.first?.isRetry == true {
                slot.pending[0].notBefore = nil
                slot.retryTimer?.cancel()
                slot.retryTimer = nil
            }
            slots[id] = slot
        }
    }

    func stop(_ running: Running, outcome: ActionOutcome) {
        running.task.cancel()
        running.timer.cancel()
        report(running.queued, outcome)
    }

    func store(_ slot: Slot, for id: ServiceID) {
        slots[id] = slot
        if let waiting = dependents.removeValue(forKey: id) {
            for dependent in waiting.sorted() { tryStart(dependent) }
        }
        guard slot.isIdle else {
            active.insert(id)
            return
        }
        active.remove(id)
        if active.isEmpty && !idleWaiters.isEmpty {
            let waiters = idleWaiters
            idleWaiters = [:]
            for continuation in waiters.values { continuation.resume() }
        }
    }

    func resumeIdleWaiter(_ token: UInt64) {
        idleWaiters.removeValue(forKey: token)?.resume()
    }

    func report(_ queued: Queued, _ outcome: ActionOutcome, at instant: ContinuousClock.Instant? = nil) {
        let event = ActionEvent(
            action: queued.action, epoch: queued.epoch, attempt: queued.attempt, outcome: outcome,
            at: instant ?? clock.now)
        if outcome != .started {
            metrics.count(plugin: route(queued.action)?.id ?? "none", kind: queued.action.kind, outcome: outcome)
        }
        switch outcome {
        case .started, .succeeded, .superseded, .skipped:
            if logger.logLevel <= .debug { log(event, level: .debug) }
        case .cancelled, .retrying, .timedOut:
            log(event, level: .info)
        case .failed:
            log(event, level: .warning)
        }
        onEvent?(event)
        broadcast.yield(event)
    }

    private func log(_ event: ActionEvent, level: Logger.Level) {
        var metadata: Logger.Metadata = [
            "action.kind": "\(event.action.kind)", "service.id": "\(event.action.service)",
            "epoch": "\(event.epoch)", "attempt": "\(event.attempt)", "trigger": "\(event.action.trigger.name)",
        ]
        var message = "action \(event.outcome.label)"
        switch event.outcome {
        case .retrying(let at, let error):
            metadata["retry.in"] = at.map { "\($0 - event.at)" } ?? "held"
            message += ": \(error)"
        case .failed(let error):
            message += ": \(error)"
        default:
            break
        }
        logger.log(level: level, "\(message)", metadata: metadata)
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}

extension ActionExecutor.Slot {
    /// Whether an action of another kind runs or waits here.
    func hasWork(otherThan kind: ActionKind) -> Bool {
        running.map { $0.queued.action.kind != kind } == true || pending.contains { $0.action.kind != kind }
    }

    /// Whether this (prerequisite) service still has work that must finish before `action`:
    /// anything from an older batch, or from the same or a newer batch unless it waits for
    /// `action`'s service. A newer batch blocks because it replaced the prerequisite's own work
    /// of `action`'s batch (an address changed again): a SUBSCRIBE of the older decision must
    /// not start in the moment between the newer batch superseding its REGISTER and replacing it
    /// too, nor at all before the REGISTER that now binds the account. A newer flow ping replaces
    /// nothing (see `replacePending`), so it does not block.
    func blocks(_ action: ActionExecutor.Queued) -> Bool {
        func blocking(_ other: ActionExecutor.Queued) -> Bool {
            if other.batch < action.batch { return true }
            if other.batch > action.batch && other.action.kind == .pingFlow { return false }
            return !other.action.after.contains(action.action.service)
        }
        if let running, blocking(running.queued) { return true }
        return pending.first.map(blocking) ?? false
    }
}
