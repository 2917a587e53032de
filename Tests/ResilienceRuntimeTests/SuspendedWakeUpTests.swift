import ResilienceCore
import ResilienceRules
import ResilienceTesting
import ServiceLifecycle
import Testing

@testable import ResilienceRuntime

/// Suspended wakes for nothing: an account without a push token arms no refresh or ping the
/// rules would decide nothing for in `suspended`, asked of the policy in force.
@Suite(.timeLimit(.minutes(3)))
struct SuspendedWakeUpTests {
    let clock = ManualClock()
    let plugin = RecordingPlugin(id: "sip", actions: Set(ActionKind.builtIn))

    /// A registration (no push token) whose refresh falls due 1,770 s from now, with a 30 s
    /// flow ping.
    var registration: ClientService {
        ClientService(
            id: "alice.reg", kind: .registration, account: "alice", expires: clock.now + .seconds(1800),
            flowPingInterval: .seconds(30))
    }

    /// A user policy's row that refreshes a due registration while suspended.
    static let suspendedRefresh = Rule(
        "suspended-refresh", on: [.named("refresh.due")], when: [.suspended], for: [.registration], if: [.due],
        do: [.refreshRegistration])

    func startSuspended(rules: [Rule] = Policy.defaultRules) async throws -> (
        ResilienceManager, EventRecorder<ResilienceEvent>, ServiceGroup, Task<Void, any Error>
    ) {
        let manager = ResilienceManager(
            source: ScriptedNetworkSource(clock: clock), policy: Policy(holdDown: .zero, rules: rules),
            plugins: [plugin], appState: .background, clock: clock, configuration: .init(randomSeed: 5), logger: quiet)
        await manager.register(registration)
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: quiet)
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decision?.trigger == .started } }
        await manager.setAppState(.suspended)
        try await events.wait { $0.contains { $0.decision?.trigger == .app(.suspending) } }
        return (manager, events, group, run)
    }

    /// An hour of clock in minute steps, each wake-up fired in its own minute, then a trigger
    /// decided after anything that fell due.
    func anHourPasses(_ manager: ResilienceManager, _ events: EventRecorder<ResilienceEvent>) async throws {
        for _ in 0..<60 {
            clock.advance(by: .seconds(60))
            // A wake-up that fell due fires and re-arms before the next minute (else one late fire
            // would take everything due at once); bounded, a hang guard, not a timing.
            for _ in 0..<5000 {
                guard let next = await manager.scheduler.nextWakeUp, next <= clock.now else { break }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        await manager.pushTokenChanged()
        try await events.wait { $0.contains { $0.decision?.trigger == .pushTokenChanged } }
    }

    static func decided(_ name: String, in events: [ResilienceEvent]) -> [(trigger: Trigger, actions: [PlannedAction])]
    {
        events.compactMap(\.decision).filter { $0.trigger.name == name }.map { ($0.trigger, $0.actions) }
    }

    @Test func theDefaultPolicyArmsNoWakeUpForASuspendedAccountWithoutAPushTokenAndRefreshesOnWaking() async throws {
        let (manager, events, group, run) = try await startSuspended()
        #expect(await manager.status().nextWakeUp == nil)
        try await anHourPasses(manager, events)
        #expect(await manager.scheduler.wakeUps == 0)
        #expect(Self.decided("refresh.due", in: events.recorded).isEmpty)
        #expect(Self.decided("flow.ping-due", in: events.recorded).isEmpty)
        // Its flow stays (no push token): nothing was released or sent.
        #expect(plugin.starts.map(\.action.kind).filter { $0 != .register }.isEmpty)

        // Background again: the refresh that fell due (at 1,770 s) is armed at once, not lost.
        await manager.setAppState(.background)
        let wake = try await events.first {
            guard case .refreshDue(let ids) = $0.decision?.trigger else { return false }
            return ids == ["alice.reg"]
        }
        #expect(wake.decision?.actions.map(\.kind) == [.refreshRegistration])
        #expect(await manager.scheduler.wakeUps == 1)
        #expect(await manager.scheduler.nextPing(of: "alice.reg") != nil)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func aPolicyRowThatRefreshesWhileSuspendedStillWakesForTheRefreshButNotForPings() async throws {
        let (manager, events, group, run) = try await startSuspended(
            rules: Policy.defaultRules + [Self.suspendedRefresh])
        #expect(await manager.status().nextWakeUp != nil)
        #expect(await manager.scheduler.nextPing(of: "alice.reg") == nil)
        try await anHourPasses(manager, events)
        // The wake-up's trigger may be queued after the hour's own: waited for, bounded.
        try await events.wait { !Self.decided("refresh.due", in: $0).isEmpty }
        let refreshes = Self.decided("refresh.due", in: events.recorded)
        #expect(refreshes.map(\.trigger) == [.refreshDue(["alice.reg"])])
        #expect(refreshes.first?.actions.map(\.source).allSatisfy { $0.hasPrefix("rule suspended-refresh") } == true)
        #expect(refreshes.first?.actions.map(\.kind) == [.refreshRegistration])
        // The flow ping decides nothing suspended: its wake-ups were not armed.
        #expect(Self.decided("flow.ping-due", in: events.recorded).isEmpty)
        #expect(await manager.scheduler.wakeUps == 1)
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
