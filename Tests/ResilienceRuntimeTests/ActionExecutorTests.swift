import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(3)))
struct ActionExecutorTests {
    let clock = ManualClock()
    let plugin = RecordingPlugin()

    /// The recorder reads the executor's events in a task of its own: right after
    /// `waitUntilIdle()` the last ones may still be on their way, so tests wait for them.
    func makeExecutor(path: NetworkPath = upPath) -> (ActionExecutor, EventRecorder<ActionEvent>) {
        let executor = ActionExecutor(
            plugins: [plugin], clock: clock, configuration: .init(randomSeed: 42), path: path, logger: quiet)
        return (executor, EventRecorder.recording(executor.events()))
    }

    @Test func newerDecisionReplacesThePendingOneWhichNeverReachesThePlugin() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.gate, .succeed], for: "reg")
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        await plugin.waitForStarts(count: 1)
        await executor.submit([planned(.refreshRegistration, "reg")], epoch: .initial)
        await executor.submit([planned(.unregisterOldContact, "reg")], epoch: .initial)
        plugin.release("reg")
        await executor.waitUntilIdle()
        let outcomes = try await events.wait("5 events") { $0.count >= 5 }.map {
            "\($0.action.kind) \($0.outcome.label)"
        }
        #expect(
            outcomes == [
                "register started", "refresh-registration superseded", "register succeeded",
                "unregister-old-contact started", "unregister-old-contact succeeded",
            ])
        #expect(!plugin.starts.contains { $0.action.kind == .refreshRegistration })
    }

    /// An address change decided while the previous register is still in flight: the old attempt
    /// (maybe bound to an address that is gone) is cancelled and the new one starts at once.
    @Test func aNewerBatchDoingTheSameKindAgainSupersedesTheRunningAttempt() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.hang, .succeed], for: "reg")
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        await plugin.waitForStarts(count: 1)
        await executor.submit([planned(.register, "reg"), planned(.unregisterOldContact, "reg")], epoch: .initial)
        await executor.waitUntilIdle()
        let outcomes = try await events.wait("6 events") { $0.count >= 6 }.map {
            "\($0.action.kind) \($0.outcome.label)"
        }
        #expect(
            outcomes == [
                "register started", "register superseded", "register started", "register succeeded",
                "unregister-old-contact started", "unregister-old-contact succeeded",
            ])
        // The new attempt does not wait for the stale one to end: their completions may come in
        // either order, but the stale one saw its cancellation.
        let staleCancelled = RecordingPlugin.Completion.cancelled(planned(.register, "reg"))
        for _ in 0..<500 where !plugin.completions.contains(staleCancelled) {  // hang guard: 5 s
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(plugin.completions.contains(staleCancelled))
        #expect(clock.now == events.recorded.first?.at, "no time passed: nothing waited for the stale attempt")
    }

    @Test func aNewLossCancelsRunningActionsOfOlderEpochsAndNeverReportsThemSucceeded() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.hang], for: "a")
        plugin.program([.hangIgnoringCancellation], for: "b")
        await executor.submit([planned(.register, "a"), planned(.subscribe, "b")], epoch: .initial)
        await plugin.waitForStarts(count: 2)
        await executor.networkChanged(lostPath, network: .empty, epoch: NetworkEpoch(rawValue: 1))
        try await events.wait(count: 2) { $0.outcome == .cancelled }
        plugin.release("b")  // the plugin "succeeds" late; the executor must not say so
        plugin.program([.succeed], for: "b")
        await executor.submit([planned(.subscribe, "b")], epoch: NetworkEpoch(rawValue: 1))
        try await events.wait { $0.contains { $0.isSucceeded && $0.epoch.rawValue == 1 } }
        await executor.waitUntilIdle()
        #expect(plugin.completions.contains(.cancelled(planned(.register, "a"))))
        #expect(!events.recorded.contains { $0.isSucceeded && $0.epoch == .initial })
        #expect(events.recorded.filter { $0.outcome == .cancelled }.map(\.action.service).sorted() == ["a", "b"])
    }

    @Test func registrationGoesBeforeItsAccountsServicesUnderConcurrency() async throws {
        let (executor, events) = makeExecutor()
        var batch: [PlannedAction] = []
        for account in 0..<20 {
            let reg = ServiceID("acct\(account).reg")
            plugin.program([.gate], for: reg)
            batch.append(planned(.register, reg))
            for dependent in ["sub", "call", "pub"] {
                batch.append(planned(.subscribe, ServiceID("acct\(account).\(dependent)"), after: [reg]))
            }
        }
        await executor.submit(batch.shuffled(), epoch: .initial)
        await plugin.waitForStarts(count: 20)
        #expect(plugin.starts.allSatisfy { $0.action.kind == .register })
        for account in (0..<20).shuffled() { plugin.release(ServiceID("acct\(account).reg")) }
        await executor.waitUntilIdle()
        let total = batch.count
        let items = try await events.wait("every action succeeded") { $0.filter(\.isSucceeded).count >= total }
        for action in batch where !action.after.isEmpty {
            let start = items.firstIndex { $0.action == action && $0.isStarted }
            let prerequisiteDone = items.firstIndex { $0.action.service == action.after.first && $0.isSucceeded }
            #expect(start != nil && prerequisiteDone != nil && start! > prerequisiteDone!)
        }
    }

    /// A newer decision arrives while the registration still works on the older one (closing a
    /// stale transport): the older decision's SUBSCRIBE never starts (its register was superseded;
    /// starting it anyway sent one SUBSCRIBE per decision in a netlink overrun's burst), and the
    /// newer one starts once, after the newer register succeeded.
    @Test func aSupersededBatchsSubscriptionNeverStartsBeforeTheNewerRegister() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.hang, .succeed, .succeed, .succeed], for: "reg")
        func decision() -> [PlannedAction] {
            [
                planned(.closeStaleTransports, "reg"), planned(.register, "reg"),
                planned(.subscribe, "sub", after: ["reg"]),
            ]
        }
        await executor.submit(decision(), epoch: .initial)
        await plugin.waitForStarts(count: 1)
        await executor.submit(decision(), epoch: .initial)
        await executor.waitUntilIdle()
        let items = try await events.wait("the subscription succeeded") {
            $0.contains { $0.action.kind == .subscribe && $0.isSucceeded }
        }
        let subscribeStarts = items.indices.filter { items[$0].action.kind == .subscribe && items[$0].isStarted }
        let registered = items.firstIndex { $0.action.kind == .register && $0.isSucceeded }
        #expect(subscribeStarts.count == 1, "\(items.map { "\($0.action.kind) \($0.outcome.label)" })")
        #expect(registered != nil && subscribeStarts.allSatisfy { $0 > registered! })
        #expect(plugin.starts.filter { $0.action.kind == .subscribe }.count == 1)
    }

    /// A batch where the registration both goes first and last (bring-up, subscriptions, then
    /// unregister after them) must not deadlock.
    @Test func aServiceFirstAndLastInOneBatchDoesNotDeadlockItsDependents() async throws {
        let (executor, events) = makeExecutor()
        await executor.submit(
            [
                planned(.register, "reg"), planned(.subscribe, "sub", after: ["reg"]),
                planned(.unregister, "reg", after: ["sub"]),
            ], epoch: .initial)
        await executor.waitUntilIdle()
        let order = try await events.wait("the unregister succeeded") {
            $0.contains { $0.action.kind == .unregister && $0.isSucceeded }
        }.filter(\.isSucceeded).map { "\($0.action.kind)" }
        #expect(order == ["register", "subscribe", "unregister"])
    }

    @Test func backoffDelaysStayInsideTheJitterBoundsOfTheFormula() async throws {
        let (executor, events) = makeExecutor()
        let policy = ActionExecutor.Configuration().backoff
        plugin.program([.fail(PluginError("503"))], for: "reg")
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        var delays: [Duration] = []
        for failure in 1...14 {
            let retry = try await events.wait(count: failure) { $0.isRetrying }.last!
            let delay = retry.retryAt! - retry.at
            let bounds = policy.delayBounds(afterFailures: failure)
            #expect(delay >= bounds.lowerBound - .microseconds(1) && delay <= bounds.upperBound + .microseconds(1))
            delays.append(delay)
            clock.advance(to: retry.retryAt!)
        }
        #expect(delays.last! >= .seconds(96) && delays.last! <= .seconds(144))  // capped at 120 s ± 20 %
        #expect(Set(delays).count == delays.count)  // jittered, not constant
        await executor.cancelAll()
    }

    @Test func retryAfterWinsOverBackoff() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.fail(PluginError("503", retryAfter: .seconds(7))), .succeed], for: "reg")
        let start = clock.now
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        let retry = try await events.wait { $0.isRetrying }.first!
        #expect(retry.retryAt == start + .seconds(7))
        clock.advance(by: .seconds(6))
        #expect(plugin.starts.count == 1)
        clock.advance(by: .seconds(1))
        try await events.wait { $0.isSucceeded }
        #expect(plugin.starts.map(\.attempt) == [1, 2])
    }

    @Test func nothingIsRetriedWhileUnsatisfiedAndEverythingHeldStartsAtOnceOnRestore() async throws {
        let (executor, events) = makeExecutor(path: lostPath)
        let ids = (0..<10).map { ServiceID("svc\($0)") }
        for id in ids { plugin.program([.fail(PluginError("no route")), .succeed], for: id) }
        await executor.submit(ids.map { planned(.register, $0) }, epoch: .initial)
        let held = try await events.wait(count: 10) { $0.isRetrying }
        #expect(held.allSatisfy { $0.retryAt == nil })
        clock.advance(by: .seconds(3600))
        #expect(plugin.starts.count == 10)
        #expect(clock.sleeperCount == 0)  // no retry timer, no action timer: zero wake-ups
        let restoredAt = clock.now
        await executor.networkChanged(upPath, network: .empty, epoch: .initial)
        let succeeded = try await events.wait(count: 10) { $0.isSucceeded }
        #expect(succeeded.allSatisfy { $0.at == restoredAt && $0.attempt == 2 })
    }

    @Test func aRestoreHandsPluginsTheLastLossOfThePath() async throws {
        let (executor, events) = makeExecutor()
        await executor.submit([planned(.register, "before")], epoch: .initial)
        try await events.wait { $0.isSucceeded }
        await executor.networkChanged(lostPath, network: .empty, epoch: NetworkEpoch(rawValue: 1))
        clock.advance(by: .seconds(45))
        let restoredAt = clock.now
        await executor.networkChanged(
            upPath, network: .empty, epoch: NetworkEpoch(rawValue: 1), then: [planned(.reinviteCall, "call")],
            restoredAfter: .seconds(47))
        try await events.wait(count: 2) { $0.isSucceeded }
        #expect(plugin.starts.first?.lastPathLoss == nil, "no loss before the first action")
        // The downtime counts from when the path went (the hold-down included), not from the report.
        #expect(plugin.starts.last?.lastPathLoss == (restoredAt - .seconds(47))..<restoredAt)
    }

    @Test func aLossStopsAScheduledRetryAndTheRestoreStartsItWithBackoffReset() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.fail(PluginError("503")), .fail(PluginError("503")), .succeed], for: "reg")
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        let first = try await events.wait { $0.isRetrying }.first!
        await executor.networkChanged(lostPath, network: .empty, epoch: NetworkEpoch(rawValue: 1))
        clock.advance(to: first.retryAt! + .seconds(60))
        #expect(plugin.starts.count == 1)
        await executor.networkChanged(upPath, network: .empty, epoch: NetworkEpoch(rawValue: 1))
        let second = try await events.wait(count: 2) { $0.isRetrying }.last!
        let bounds = ActionExecutor.Configuration().backoff.delayBounds(afterFailures: 1)
        #expect(bounds.contains(second.retryAt! - second.at))
        clock.advance(to: second.retryAt!)
        try await events.wait { $0.isSucceeded }
    }

    @Test func anActionPastItsDeadlineTimesOutAndIsRetried() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.hang, .succeed], for: "reg")
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        await plugin.waitForStarts(count: 1)
        #expect(plugin.starts[0].deadline == clock.now + .seconds(30))
        clock.advance(by: .seconds(30))
        let retry = try await events.wait { $0.isRetrying }.first!
        #expect(events.recorded.contains { $0.outcome == .timedOut })
        clock.advance(to: retry.retryAt!)
        try await events.wait { $0.isSucceeded }
    }

    @Test func anActionNoPluginPerformsFailsPermanently() async throws {
        let executor = ActionExecutor(plugins: [RecordingPlugin(actions: [.register])], clock: clock, logger: quiet)
        let events = EventRecorder.recording(executor.events())
        await executor.submit([planned(.openHTTP, "http")], epoch: .initial)
        let failed = try await events.wait(count: 1) { if case .failed = $0.outcome { true } else { false } }
        #expect(failed.count == 1)
        #expect(await executor.status().isEmpty)
    }
}

/// Local actions (built-in `ActionKind.local`, or a plugin's `localActions`) run while the path is down.
@Suite(.timeLimit(.minutes(3)))
struct LocalActionTests {
    let clock = ManualClock()

    @Test func aPluginsOwnLocalActionRetriesWhileTheNetworkIsDownAndANetworkActionWaits() async throws {
        let flush: ActionKind = "vendor.flush-cache"
        let plugin = RecordingPlugin(actions: [flush, .register], localActions: [flush])
        let executor = ActionExecutor(
            plugins: [plugin], clock: clock, configuration: .init(randomSeed: 1), path: lostPath, logger: quiet)
        let events = EventRecorder.recording(executor.events())
        plugin.program([.fail(PluginError("busy")), .succeed], for: "cache")
        plugin.program([.fail(PluginError("no route")), .succeed], for: "reg")
        await executor.submit([planned(flush, "cache"), planned(.register, "reg")], epoch: .initial)
        let retries = try await events.wait(count: 2, "both first attempts failing") { $0.isRetrying }
        #expect(retries.first { $0.action.service == "cache" }?.retryAt != nil, "a local retry is scheduled")
        #expect(retries.first { $0.action.service == "reg" }?.retryAt == nil, "a network retry waits for the path")
        clock.advance(by: .seconds(10))
        let done = try await events.wait("the local retry succeeding") { $0.contains(where: \.isSucceeded) }
        #expect(done.filter(\.isSucceeded).map(\.action.service) == ["cache"])
        #expect(plugin.starts.filter { $0.action.service == "reg" }.count == 1)
        #expect(await executor.status()["reg"]?.waitingForPath == true)
    }

    @Test func aLossDoesNotCancelARunningLocalAction() async throws {
        let plugin = RecordingPlugin()
        let executor = ActionExecutor(plugins: [plugin], clock: clock, path: upPath, logger: quiet)
        let events = EventRecorder.recording(executor.events())
        plugin.program([.gate], for: "api")
        plugin.program([.hang], for: "reg")
        await executor.submit([planned(.drainHTTP, "api"), planned(.register, "reg")], epoch: .initial)
        await plugin.waitForStarts(count: 2)
        await executor.networkChanged(lostPath, network: .empty, epoch: NetworkEpoch(rawValue: 1))
        try await events.wait("the register cancelled") { $0.contains { $0.outcome == .cancelled } }
        plugin.release("api")
        let drained = try await events.wait("the drain finishing") { $0.contains(where: \.isSucceeded) }
        #expect(drained.filter(\.isSucceeded).map(\.action.kind) == [.drainHTTP])
        #expect(drained.filter { $0.outcome == .cancelled }.map(\.action.kind) == [.register])
    }

    @Test func theVocabularySaysWhichBuiltInActionsAreLocal() {
        #expect(ActionKind.builtIn.filter(\.isLocal) == [.drainHTTP, .closeStaleTransports, .releaseFlow])
    }
}
