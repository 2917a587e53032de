import Logging
import ResilienceCore
import ResilienceRules
import ServiceLifecycle

extension ResilienceManager {
    /// Runs the plugins, follows the source's transitions, decides triggers and carries out the
    /// decisions until graceful shutdown (which tears down first) or cancellation (which does
    /// not). Call it once.
    public func run() async throws {
        let pluginGroup = plugins.isEmpty ? nil : ServiceGroup(services: plugins, logger: logger)
        // Detached on purpose: a child task would inherit the parent group's graceful-shutdown
        // signal and stop the plugins before the teardown actions they must perform.
        let pluginTask = pluginGroup.map { group in Task.detached { try await group.run() } }
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followTransitions() }
                group.addTask { await self.followWakeUps() }
                group.addTask { await self.followFlowActivity() }
                for plugin in self.plugins {
                    group.addTask { await self.followReports(of: plugin) }
                }
                group.addTask { await self.processTriggers() }
                if (try? await gracefulShutdown()) != nil { await self.tearDown() }
                group.cancelAll()
            }
        } onCancel: {
            pluginTask?.cancel()
        }
        isShuttingDown = true
        await executor.cancelAll()
        await scheduler.stop()
        flowLossTimer.disarm()
        holdDownTimer.disarm()
        dampingTimer.disarm()
        pushWindowTimer.disarm()
        await pluginGroup?.triggerGracefulShutdown()
        if let pluginTask { await waitForPlugins(pluginTask) }
        broadcast.finish()
        logger.info("resilience manager stopped")
    }

    /// Waits for the plugins to stop, at most `pluginShutdownTimeout` on the manager's clock;
    /// past it they are cancelled and left behind (their flows close with the process).
    private func waitForPlugins(_ task: Task<Void, any Error>) async {
        let stopped = await clock.finishes(until: clock.now.adding(clamped: configuration.pluginShutdownTimeout)) {
            _ = await task.result
        }
        if !stopped {
            task.cancel()
            logger.warning(
                "plugins did not stop in time; cancelled",
                metadata: ["timeout": "\(configuration.pluginShutdownTimeout)"])
        }
    }

    private func followTransitions() async {
        for await transition in await source.transitions() {
            if NetworkTrigger(transition) != nil {
                switch holdDown.receive(transition) {
                case .pass(let due): for transition in due { report(transition) }
                case .dropped(let lost, let restored):
                    broadcast.yield(.flapCoalesced(lost: lost, restored: restored))
                    if let change = Self.flapChange(lost: lost, restored: restored) {
                        enqueue(.network(.changed(change)), transition: restored)
                    }
                }
                rearmHoldDownTimer()
            } else {
                broadcast.yield(.transition(transition))
                // `.initial` is no change, but the rules and the executor must start from it: the
                // executor hands plugins this path (their local addresses) until the next transition.
                rules.setPath(transition.path)
                for plugin in plugins { plugin.pathChanged(rules.path) }
                await executor.networkChanged(rules.path, network: await source.snapshot(), epoch: epoch)
                if !hasStarted {
                    hasStarted = true
                    enqueue(.started)
                }
            }
        }
    }

    /// A transition past the hold-down: reported to subscribers and queued for a decision.
    private func report(_ transition: PathTransition) {
        broadcast.yield(.transition(transition))
        guard let trigger = NetworkTrigger(transition) else { return }
        enqueue(.network(trigger), transition: transition)
    }

    private func rearmHoldDownTimer() {
        holdDownTimer.arm(isShuttingDown ? nil : holdDown.deadline, on: clock) {
            await self.releaseHeldLoss(scheduledAt: $0)
        }
    }

    /// The policy's hold-down ran out with the path still lost: the loss is decided now.
    private func releaseHeldLoss(scheduledAt instant: ContinuousClock.Instant) {
        guard holdDownTimer.claim(instant), let lost = holdDown.release(at: clock.now) else { return }
        report(lost)
        rearmHoldDownTimer()
    }

    private func followWakeUps() async {
        for await trigger in wakeUps.stream { enqueue(trigger) }
    }

    /// Each successful action re-arms its service's flow ping (a no-op without one).
    private func followFlowActivity() async {
        for await service in succeeded.stream { await scheduler.flowActive(service) }
    }

    private func followReports(of plugin: any ResiliencePlugin) async {
        for await report in plugin.reports { await apply(report) }
    }

    /// Applies one plugin report (see ``PluginReport``).
    func apply(_ report: PluginReport) async {
        switch report {
        case .flowLost(let lost): flowLost(lost)
        case .flowActive(let active): for service in active { await scheduler.flowActive(service) }
        case .serviceChanged(let service), .serviceAdded(let service):
            if services[service.id] == nil { await register(service) } else { await update(service) }
        case .serviceRemoved(let id): await remove(id)
        }
    }

    /// Passes a loss report through the throttle: what it releases now is decided now, the rest
    /// when the armed timer releases it.
    func flowLost(_ lost: [ServiceID]) {
        let now = clock.now
        let immediate = flowLosses.report(lost, at: now)
        logger.debug("flow lost", metadata: ["services": "\(lost)", "now": "\(immediate)"])
        if !immediate.isEmpty { enqueue(.flowLost(immediate)) }
        rearmFlowLossTimer()
    }

    private func rearmFlowLossTimer() {
        flowLossTimer.arm(isShuttingDown ? nil : flowLosses.nextRelease, on: clock) {
            await self.releaseFlowLosses(scheduledAt: $0)
        }
    }

    private func releaseFlowLosses(scheduledAt instant: ContinuousClock.Instant) {
        guard flowLossTimer.claim(instant) else { return }
        let due = flowLosses.releaseDue(at: clock.now, succeeded: latestSuccesses.snapshot)
        if !due.isEmpty { enqueue(.flowLost(due)) }
        rearmFlowLossTimer()
    }

    private func processTriggers() async {
        for await _ in wake.stream {
            await noticeSystemSleep()
            // One item leaves the queue at a time and is decided before the next suspension, so
            // the queue and the rules engine together always hold every reported app event.
            while !queue.isEmpty && !isShuttingDown {
                if queueNeedsCoalescing {
                    queue = coalesce(queue)
                    queueNeedsCoalescing = false
                }
                guard !queue.isEmpty else { break }
                await process(queue.removeFirst())
            }
        }
    }

    /// A system sleep since the last trigger is reported as `app.resumed`, decided with the
    /// triggers that woke the manager (refreshing what expired or will before the next wake-up).
    /// Timers need no help: they run on CLOCK_BOOTTIME and fire at wake-up when they fell due.
    private func noticeSystemSleep() async {
        guard let slept = sleepDetector.observe(asleep: configuration.timeAsleep()) else { return }
        logger.notice("system slept; resuming", metadata: ["slept": "\(slept)"])
        await handle(.resumed)
    }

    /// Drops every `lost` directly followed by its `restored` (nothing was decided in between).
    /// When the path came back different, the pair becomes one `changed` trigger instead.
    func coalesce(_ items: [QueuedTrigger]) -> [QueuedTrigger] {
        var out: [QueuedTrigger] = []
        for item in items {
            guard case .network(.restored) = item.trigger, let last = out.last,
                case .network(.lost) = last.trigger, let lost = last.transition, let restored = item.transition
            else {
                out.append(item)
                continue
            }
            out.removeLast()
            broadcast.yield(.flapCoalesced(lost: lost, restored: restored))
            if let change = Self.flapChange(lost: lost, restored: restored) {
                out.append(QueuedTrigger(trigger: .network(.changed(change)), transition: restored))
            }
        }
        return out
    }

    /// What a dropped loss-and-restore pair still changed: the interface, or the addresses.
    static func flapChange(lost: PathTransition, restored: PathTransition) -> PathChange? {
        let before = lost.previous ?? restored.path
        if before.primaryInterface != restored.path.primaryInterface { return .interfaceSwitched }
        if before.addresses != restored.path.addresses { return .address }
        return nil
    }

    private func process(_ item: QueuedTrigger) async {
        let now = clock.now
        guard admit(item, at: now) else { return }
        if case .network(.lost) = item.trigger { epoch = epoch.next }
        let actions = decide(item.trigger, path: item.transition?.path, at: now)
        if case .app = item.trigger {
            await scheduler.setAppState(rules.appState)
            await updateSleep()
        } else if case .network = item.trigger, rules.appState == .suspended {
            await updateSleep()  // the rules plan nothing that needs a network while it is down
        }
        broadcast.yield(.decision(trigger: item.trigger, epoch: epoch, actions: actions, at: now))
        logger.debug(
            "decided",
            metadata: ["trigger": "\(item.trigger.name)", "epoch": "\(epoch)", "actions": "\(actions.count)"])
        if item.transition != nil {
            // The engine's path, just taken from this transition: status and the executor agree.
            let path = rules.path
            for plugin in plugins { plugin.pathChanged(path) }
            let snapshot = await source.snapshot()
            guard !isShuttingDown else { return }
            let downtime: Duration? = if case .restored(let downtime) = item.transition?.kind { downtime } else { nil }
            await executor.networkChanged(path, network: snapshot, epoch: epoch, then: actions, restoredAfter: downtime)
        } else if Self.mayChangeSuspension(item.trigger) {
            await submitAcrossSuspension(actions, trigger: item.trigger)
        } else {
            await executor.submit(actions, epoch: epoch)
        }
    }

    /// Decides one trigger; the rules engine takes `path` (a network trigger's transition) either way.
    func decide(_ trigger: Trigger, path: NetworkPath? = nil, at now: ContinuousClock.Instant) -> [PlannedAction] {
        let list = services.values.sorted { $0.id < $1.id }
        if let customDecide {
            rules.observe(trigger, services: list, path: path)
            return customDecide(trigger, list, now)
        }
        return Self.subscriptionsAfterTheirRegistration(
            rules.decide(trigger, services: list, path: path, at: now), services: services)
    }

    /// Decides `.shutdown` and gives its actions `shutdownTimeout` on the manager's clock.
    private func tearDown() async {
        isShuttingDown = true
        queue = []
        let start = clock.now
        let actions = decide(.shutdown, at: start)
        broadcast.yield(.decision(trigger: .shutdown, epoch: epoch, actions: actions, at: start))
        await executor.submit(actions, epoch: epoch)
        // Held work would run only when the app wakes, which it will not now: do not wait for it.
        await executor.dropHeldWhileSuspended()
        let executor = self.executor
        let finished = await clock.finishes(
            until: start.adding(clamped: configuration.shutdownTimeout)
        ) { await executor.waitUntilIdle() }
        if finished {
            logger.info("teardown finished", metadata: ["actions": "\(actions.count)"])
        } else {
            logger.warning("teardown deadline passed; cancelling", metadata: ["actions": "\(actions.count)"])
        }
    }
}

extension ResilienceManager {
    /// Names the account's registration in `after` of every subscribe and refresh-subscription,
    /// also when the batch does not bring the registration up (a subscription its notifier
    /// ended, a lost flow reported for subscriptions alone). The executor then holds the
    /// subscription while an older decision's register of that account still runs or waits for
    /// its retry (and not otherwise), so a registrar never sees an account's SUBSCRIBE before
    /// the REGISTER that binds it.
    static func subscriptionsAfterTheirRegistration(
        _ actions: [PlannedAction], services: [ServiceID: ClientService]
    ) -> [PlannedAction] {
        actions.map { action in
            guard action.kind == .subscribe || action.kind == .refreshSubscription,
                let account = services[action.service]?.account
            else { return action }
            var ordered = action
            for service in services.values where service.kind == .registration && service.account == account {
                ordered.after.insert(service.id)
            }
            return ordered
        }
    }
}
