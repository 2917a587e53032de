import Logging
import ResilienceCore
import ResilienceRules
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// A small stand-in for the rules engine: register then subscribe on restore, refresh what is
/// due, re-INVITE on call changes, unsubscribe/drain then unregister on shutdown.
let testDecide: ResilienceManager.Decide = { trigger, services, _ in
    let registrations = services.filter { $0.kind == .registration }.map(\.id)
    let others = services.filter { $0.kind != .registration }
    switch trigger {
    case .network(.restored), .network(.changed):
        return registrations.map { planned(.register, $0, trigger: trigger) }
            + others.map { planned(.subscribe, $0.id, after: Set(registrations), trigger: trigger) }
    case .refreshDue(let ids):
        return ids.map { planned(.refreshRegistration, $0, trigger: trigger) }
    case .callStateChanged(let id):
        return [planned(.reinviteCall, id, trigger: trigger)]
    case .shutdown:
        return others.map { planned($0.kind == .http ? .drainHTTP : .unsubscribe, $0.id, trigger: trigger) }
            + registrations.map {
                planned(.unregister, $0, after: Set(others.filter { $0.kind != .http }.map(\.id)), trigger: trigger)
            }
    default:
        return []
    }
}

let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

@Suite(.timeLimit(.minutes(3)))
struct ResilienceManagerTests {
    let clock = ManualClock()
    let source: ScriptedNetworkSource
    let sip = RecordingPlugin(id: "sip", actions: Set(ActionKind.builtIn).subtracting([.drainHTTP]))
    let http = RecordingPlugin(id: "http", actions: [.drainHTTP])

    init() { source = ScriptedNetworkSource(clock: clock) }

    func start(
        _ services: [ClientService], damping: FlapDampingPolicy = FlapDampingPolicy()
    ) async throws -> (ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>) {
        let manager = ResilienceManager(
            source: source, policy: Policy(holdDown: .zero, flapDamping: damping), plugins: [sip, http], clock: clock,
            configuration: .init(randomSeed: 7), logger: quiet, decide: testDecide)
        for service in services { await manager.register(service) }
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        return (manager, events, group, run)
    }

    static let account = [
        ClientService(id: "a.reg", kind: .registration, account: "a"),
        ClientService(id: "a.mwi", kind: .subscription(.messageSummary), account: "a"),
        ClientService(id: "a.http", kind: .http),
    ]

    @Test func aLossAndARestoreAreDecidedInNewEpochsAndCarriedOutInOrder() async throws {
        let (manager, events, group, run) = try await start(Self.account)
        await source.lose(.noCarrier)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        #expect(await manager.status().epoch == NetworkEpoch(rawValue: 1))
        await source.restore()
        let items = try await events.wait { $0.filter { $0.action?.isSucceeded == true }.count == 3 }
        let done = items.compactMap(\.action).filter(\.isSucceeded).map(\.action.service)
        #expect(done.first == "a.reg")
        #expect(items.compactMap(\.action).allSatisfy { $0.epoch.rawValue == 1 })
        let status = await manager.status()
        #expect(status.path.isSatisfied && status.actions.isEmpty && status.services.count == 3)
        await group.triggerGracefulShutdown()
        try await run.value
        #expect(sip.starts.suffix(2).map(\.action.kind) == [.unsubscribe, .unregister])
    }

    @Test func shutdownRunsTeardownWithinItsDeadlineEvenWhenAPluginHangs() async throws {
        http.program([.hangIgnoringCancellation], for: "a.http")
        let (_, events, group, run) = try await start(Self.account)
        let begin = clock.now
        await group.triggerGracefulShutdown()
        try await events.wait { items in
            items.contains { $0.action?.action.kind == .unregister && $0.action?.isSucceeded == true }
                && items.contains { $0.action?.action.kind == .drainHTTP && $0.action?.isStarted == true }
        }
        clock.advance(by: .seconds(5))  // the shutdown deadline; the drain never returns
        try await run.value
        #expect(clock.now - begin == .seconds(5))
        #expect(events.recorded.contains { $0.action?.action.kind == .drainHTTP && $0.action?.outcome == .cancelled })
    }

    /// Storms of 50 losses and restores: fed at once (pairs cancel out before they are decided)
    /// and paced (every loss is decided, so every restore is too and each loss cancels the
    /// registrations of the epoch before).
    @Test(arguments: [false, true])
    func aFlapStormCoalescesAndEveryServiceEndsRegisteredOnce(paced: Bool) async throws {
        let services = (0..<5).map { ClientService(id: ServiceID("r\($0)"), kind: .registration) }
        for service in services { sip.program([.gate], for: service.id) }
        // Damping off: this is about coalescing and epochs (ManagerDampingTests bound the storm's cost).
        let (_, events, group, run) = try await start(services, damping: .off)
        for round in 1...50 {
            await source.lose(.noCarrier)
            if paced { try await events.wait { $0.filter(\.isNetworkDecision).count == 2 * round - 1 } }
            await source.restore()
        }
        // Every transition is either decided or dropped as half of a coalesced pair.
        let items = try await events.wait { items in
            let decided = items.filter(\.isNetworkDecision).count
            return decided + 2 * items.filter(\.isFlapCoalesced).count == 100
        }
        let restores = items.compactMap(\.decision).filter { $0.trigger == .network(.restored) }
        guard let finalEpoch = restores.map(\.epoch).max() else {
            // Every pair cancelled out before it was decided: nothing at all was done.
            #expect(sip.starts.isEmpty)
            for service in services { sip.program([.succeed], for: service.id) }
            await group.triggerGracefulShutdown()
            try await run.value
            return
        }
        #expect(restores.count + items.filter(\.isFlapCoalesced).count == 50)
        if paced { #expect(restores.count == 50 && finalEpoch.rawValue == 50) }
        try await events.wait { items in
            let started = Set(
                items.compactMap(\.action).filter { $0.isStarted && $0.epoch == finalEpoch }.map(\.action.service))
            return started.count == 5
        }
        for service in services {
            sip.program([.succeed], for: service.id)
            sip.release(service.id)
        }
        let final = try await events.wait { $0.compactMap(\.action).filter(\.isSucceeded).count == 5 }.compactMap(
            \.action)
        #expect(final.filter(\.isSucceeded).allSatisfy { $0.epoch == finalEpoch })
        #expect(final.filter(\.isStarted).count <= 5 * 51)
        #expect(
            final.filter { $0.isStarted && $0.epoch < finalEpoch }.count
                == final.filter { $0.outcome == .cancelled }.count)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func appStateCallStateAndRefreshDueBecomeTriggers() async throws {
        let call = ClientService(id: "call", kind: .call(.outgoing, .active))
        let reg = ClientService(id: "reg", kind: .registration, expires: clock.now + .seconds(3600))
        let (manager, events, group, run) = try await start([reg, call])
        await manager.setAppState(.background)
        var held = call
        held.kind = .call(.outgoing, .held)
        await manager.update(held)
        #expect(await manager.status().nextWakeUp == reg.expires! - .seconds(30))
        clock.advance(to: reg.expires! - .seconds(30))
        let decided = try await events.wait { $0.compactMap(\.decision).count == 4 }.compactMap(\.decision).map(
            \.trigger)
        #expect(decided == [.started, .app(.enteredBackground), .callStateChanged("call"), .refreshDue(["reg"])])
        try await events.wait { $0.compactMap(\.action).filter(\.isSucceeded).count == 2 }
        #expect(await manager.status().appState == .background)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func startedIsDecidedOnceAfterTheInitialPath() async throws {
        let (_, events, group, run) = try await start(Self.account)
        await source.lose(.noCarrier)
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
        await source.restore()
        try await events.wait { $0.contains { $0.decision?.trigger == .network(.restored) } }
        let triggers = events.recorded.compactMap(\.decision).map(\.trigger)
        #expect(triggers.first == .started)
        #expect(triggers.filter { $0 == .started }.count == 1)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func aRepeatedFlowLossWaitsTheBackoffAndLossesWaitingTogetherShareATrigger() async throws {
        let (_, events, group, run) = try await start(Self.account)
        @Sendable func flowLosses(_ items: [ResilienceEvent]) -> [Trigger] {
            items.compactMap(\.decision).map(\.trigger).filter { $0.name == "flow.lost" }
        }
        // First losses are decided at once.
        sip.reportFlowLoss(["a.reg"])
        try await events.wait { flowLosses($0) == [.flowLost(["a.reg"])] }
        sip.reportFlowLoss(["a.mwi"])
        try await events.wait { flowLosses($0).count == 2 }
        // The server drops both new flows at once: both wait the first backoff (1 s ± 20 %).
        sip.reportFlowLoss(["a.reg", "a.mwi"])
        await clock.waitForSleepers(count: 1)
        #expect(flowLosses(events.recorded) == [.flowLost(["a.reg"]), .flowLost(["a.mwi"])])
        clock.advance(by: .milliseconds(1200))
        let decided = try await events.wait { flowLosses($0).count == 3 }
        #expect(flowLosses(decided).last == .flowLost(["a.mwi", "a.reg"]))
        #expect(clock.wakeUps == 1)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func flowPingIntervalsBecomeFlowPingTriggers() async throws {
        let reg = ClientService(id: "reg", kind: .registration, flowPingInterval: .seconds(30))
        let (manager, events, group, run) = try await start([reg])
        let first = try #require(await manager.status().nextWakeUp)
        #expect(first - clock.now >= .seconds(24) && first - clock.now <= .seconds(30))
        clock.advance(to: first)
        try await events.wait { $0.contains { $0.decision?.trigger == .flowPingDue(["reg"]) } }
        var slower = reg
        slower.flowPingInterval = .seconds(300)
        await manager.update(slower)
        let next = try #require(await manager.status().nextWakeUp)
        #expect(next - clock.now >= .seconds(240) && next - clock.now <= .seconds(300))
        slower.flowPingInterval = nil
        await manager.update(slower)
        #expect(await manager.status().nextWakeUp == nil)
        await group.triggerGracefulShutdown()
        try await run.value
    }
}

extension ResilienceEvent {
    var isNetworkDecision: Bool {
        guard case .decision(.network, _, _, _) = self else { return false }
        return true
    }
}
