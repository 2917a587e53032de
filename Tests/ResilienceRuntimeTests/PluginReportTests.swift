import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// A plugin's reports applied by a manager running the default policy, as an embedding app
/// would run it: no code of the app's own between the plugin and the refresh timer.
@Suite(.timeLimit(.minutes(3)))
struct PluginReportTests {
    let clock = ManualClock()
    let source: ScriptedNetworkSource
    let sip = RecordingPlugin(id: "sip")
    static let registration = ClientService(id: "a.registration", kind: .registration, account: "a")
    static let subscriptions = [
        ClientService(id: "a.subscription.reg", kind: .subscription(.reg), account: "a"),
        ClientService(id: "a.subscription.message-summary", kind: .subscription(.messageSummary), account: "a"),
    ]

    init() { source = ScriptedNetworkSource(clock: clock) }

    func start(_ services: [ClientService], policy: Policy = .default) async throws -> (
        ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>
    ) {
        let manager = ResilienceManager(
            source: source, policy: policy, plugins: [sip], clock: clock, configuration: .init(randomSeed: 11),
            logger: quiet)
        for service in services { await manager.register(service) }
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        let started = try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        let count = started.compactMap(\.decision).first { $0.trigger == .started }?.actions.count ?? 0
        try await events.wait { items in items.compactMap(\.action).filter(\.isSucceeded).count >= count }
        return (manager, events, group, run)
    }

    /// Polls (bounded, yielding) until the manager applied a report; the manager gives no event for it.
    func waitUntil(_ manager: ResilienceManager, _ condition: @escaping (ResilienceStatus) -> Bool) async -> Bool {
        for _ in 0..<10_000 {
            if condition(await manager.status()) { return true }
            await Task.yield()
        }
        return false
    }

    @Test func aReportedExpiryMovesTheNextRefresh() async throws {
        let granted = ClientService(
            id: Self.registration.id, kind: .registration, account: "a", expires: clock.now + .seconds(3600))
        let (manager, events, group, run) = try await start([granted])
        let margin = Policy.default.refreshMargin
        #expect(await manager.status().nextWakeUp == granted.expires! - margin)

        // The registrar granted less on the next REGISTER: the plugin says so, nothing else does.
        var shorter = granted
        shorter.expires = clock.now + .seconds(600)
        sip.report(.serviceChanged(shorter))
        #expect(await waitUntil(manager) { $0.nextWakeUp == shorter.expires! - margin })
        #expect(await manager.status().services.first?.expires == shorter.expires)

        clock.advance(to: shorter.expires! - margin)
        let refresh = try await events.wait(where: {
            $0.action?.action.kind == .refreshRegistration && $0.action?.isSucceeded == true
        })
        #expect(refresh.first?.action?.action.trigger == .refreshDue([Self.registration.id]))
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func aLostFlowIsOneBatchRegistrationFirstEachOnce() async throws {
        let services = [Self.registration] + Self.subscriptions
        let (_, events, group, run) = try await start(services)
        let before = sip.starts.count
        // Gated once (the teardown's unregister must not wait on the manual clock).
        sip.program([.gate, .succeed], for: Self.registration.id)
        // The subscriptions are reported in their own report too: one flow, one batch.
        sip.reportFlowLoss(Self.subscriptions.map(\.id).reversed() + [Self.registration.id])
        sip.reportFlowLoss(Self.subscriptions.map(\.id))
        await sip.waitForStarts(count: before + 1)
        // The registration runs alone: the subscriptions wait for it.
        #expect(sip.starts.dropFirst(before).map(\.action.kind) == [.register])
        sip.release(Self.registration.id)
        try await events.wait(
            count: 3, where: { $0.action?.isSucceeded == true && $0.action?.action.trigger.name == "flow.lost" })
        let attempts = sip.starts.dropFirst(before).map(\.action)
        #expect(attempts.first?.service == Self.registration.id)
        #expect(Set(attempts.dropFirst().map(\.service)) == Set(Self.subscriptions.map(\.id)))
        #expect(attempts.count == 3, "each service once: \(attempts.map(\.service))")
        let decisions = events.recorded.compactMap(\.decision).filter { $0.trigger.name == "flow.lost" }
        #expect(decisions.count == 1, "decided as \(decisions.count) batches")
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func aPingNeverSupersedesARegisterWaitingForItsRetry() async throws {
        let (manager, events, group, run) = try await start([Self.registration])
        sip.program([.fail(PluginError("503", retryAfter: .seconds(5))), .succeed], for: Self.registration.id)
        sip.reportFlowLoss([Self.registration.id])
        try await events.wait(where: { $0.action?.isRetrying == true })
        // Flow pings fall due (every ~1 s) while the register waits for its Retry-After.
        sip.report(
            .serviceChanged(
                ClientService(
                    id: Self.registration.id, kind: .registration, account: "a", flowPingInterval: .seconds(1))))
        #expect(await waitUntil(manager) { $0.nextWakeUp != nil })
        clock.advance(by: .seconds(1))
        try await events.wait(where: { $0.action?.action.kind == .pingFlow && $0.action?.outcome == .superseded })
        clock.advance(by: .seconds(5))
        let registered = try await events.wait(where: {
            $0.action?.action.kind == .register && $0.action?.isSucceeded == true
        })
        #expect(registered.count == 1)
        #expect(!events.recorded.contains { $0.action?.action.kind == .register && $0.action?.outcome == .superseded })
        await group.triggerGracefulShutdown()
        try await run.value
    }

    /// The interleaving behind a second REGISTER (and SUBSCRIBE round) after a UDP registrar
    /// restart: the flow ping's loss names the registration and its subscriptions; the REGISTER
    /// it decides fails, and the loss of that REGISTER's own flow waits in the loss throttle past
    /// the executor's retry, which binds the account again. Released then, the held report is
    /// moot for every service that succeeded after it: the registration (and the subscriptions,
    /// when named again) are decided 0 more times, while a service the report also names that
    /// did not succeed meanwhile (another account's registration) is still decided.
    @Test(arguments: [false, true])
    func aLossHeldPastTheRetryThatBoundAgainRedecidesOnlyWhatDidNotSucceedSince(subscriptionsNamedAgain: Bool)
        async throws
    {
        let account = [Self.registration] + Self.subscriptions
        let other = ClientService(id: "b.registration", kind: .registration, account: "b")
        let (_, events, group, run) = try await start(account + [other])
        let before = sip.starts.count
        @Sendable func flowLostDecisions(_ items: [ResilienceEvent]) -> [[PlannedAction]] {
            items.compactMap(\.decision).filter { $0.trigger.name == "flow.lost" }.map(\.actions)
        }
        @Sendable func succeeded(_ kind: ActionKind) -> @Sendable (ResilienceEvent) -> Bool {
            {
                $0.action?.action.kind == kind && $0.action?.isSucceeded == true
                    && $0.action?.action.trigger.name == "flow.lost"
            }
        }
        sip.program([.fail(PluginError("udp flow closed during REGISTER")), .succeed], for: Self.registration.id)
        let lostAt = clock.now
        sip.reportFlowLoss(account.map(\.id))
        let failure = try await events.wait(where: { $0.action?.isRetrying == true })
        guard case .retrying(let retryAt?, _) = failure.first?.action?.outcome else {
            Issue.record("no retry instant: \(failure)")
            return
        }
        try #require(retryAt - lostAt <= .milliseconds(1200), "the first retry waits about 1 s (± 20 %)")
        await clock.waitForSleepers(count: 1)  // the retry's timer
        // The failed REGISTER's flow is lost too, and so is account b's: the report waits about
        // 1 s more (as long as its registration's second loss needs), past the retry.
        clock.advance(by: .milliseconds(500))
        let again = subscriptionsNamedAgain ? account.map(\.id) : [Self.registration.id]
        sip.reportFlowLoss(again + [other.id])
        await clock.waitForSleepers(count: 2)  // and the throttle's
        clock.advance(to: retryAt)
        try await events.wait(where: succeeded(.register))
        _ = try await events.wait(count: Self.subscriptions.count, where: succeeded(.subscribe))
        #expect(flowLostDecisions(events.recorded).count == 1, "the held loss was released before the retry")

        clock.advance(by: .seconds(1))
        let decided = try await events.wait { flowLostDecisions($0).count == 2 }
        #expect(flowLostDecisions(decided).last.map { Set($0.map(\.service)) } == [other.id])
        try await events.wait(count: 2, where: succeeded(.register))
        let starts = sip.starts.dropFirst(before)
        let registers = starts.filter { $0.action.kind == .register }.map(\.action.service)
        #expect(registers.filter { $0 == Self.registration.id }.count == 2, "the failure and its retry: \(registers)")
        #expect(registers.filter { $0 == other.id }.count == 1)
        let subscribes = starts.filter { $0.action.kind == .subscribe }
        #expect(subscribes.count == Self.subscriptions.count, "\(subscribes.map(\.action.service))")
        await group.triggerGracefulShutdown()
        try await run.value
    }

    /// The same race for an account that publishes presence. The default policy republishes on
    /// a network change, not on a lost flow (a report naming the publication decides nothing
    /// for it); a policy that republishes on a lost flow too gets one PUBLISH per loss all the
    /// same: the PUBLISH waits for the account's REGISTER, runs after its retry, and its success
    /// makes the held report moot for the publication as for the registration.
    @Test func aHeldLossIsMootForAPublicationRepublishedAfterIt() async throws {
        let publication = ClientService(id: "a.presence-publish", kind: .presencePublish, account: "a")
        let other = ClientService(id: "b.registration", kind: .registration, account: "b")
        let republish = Rule(
            "flow-lost-publish", on: [.named("flow.lost")], when: [.foreground], for: [.presencePublish],
            if: [.affected], do: [.publishPresence])
        let (_, events, group, run) = try await start(
            [Self.registration, publication, other], policy: Policy(rules: Policy.defaultRules + [republish]))
        let before = sip.starts.count
        sip.program([.fail(PluginError("udp flow closed during REGISTER")), .succeed], for: Self.registration.id)
        sip.reportFlowLoss([Self.registration.id, publication.id])
        let failure = try await events.wait(where: { $0.action?.isRetrying == true })
        guard case .retrying(let retryAt?, _) = failure.first?.action?.outcome else {
            Issue.record("no retry instant: \(failure)")
            return
        }
        await clock.waitForSleepers(count: 1)  // the retry's timer
        // The failed REGISTER's flow, which the publication rides, is lost too, and so is b's.
        clock.advance(by: .milliseconds(500))
        sip.reportFlowLoss([Self.registration.id, publication.id, other.id])
        await clock.waitForSleepers(count: 2)  // and the throttle's
        // The PUBLISH waits for the account's REGISTER: it runs once the retry bound the account.
        clock.advance(to: retryAt)
        try await events.wait(where: {
            $0.action?.action.service == publication.id && $0.action?.isSucceeded == true
                && $0.action?.action.trigger.name == "flow.lost"
        })

        clock.advance(by: .seconds(2))
        let decided = try await events.wait { items in
            items.compactMap(\.decision).filter { $0.trigger.name == "flow.lost" }.count == 2
        }
        let released = decided.compactMap(\.decision).filter { $0.trigger.name == "flow.lost" }.last
        #expect(released.map { Set($0.actions.map(\.service)) } == [other.id])
        try await events.wait(where: {
            $0.action?.action.service == other.id && $0.action?.isSucceeded == true
                && $0.action?.action.trigger.name == "flow.lost"
        })
        let publishes = sip.starts.dropFirst(before).filter { $0.action.kind == .publishPresence }
        #expect(publishes.count == 1, "one per loss: \(publishes.map(\.action.trigger.name))")
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
