import Logging
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

struct SleepDetectorTests {
    @Test func eachSleepLongerThanTheThresholdIsReportedOnce() {
        var detector = SleepDetector(asleep: .seconds(100))
        #expect(detector.observe(asleep: .seconds(100)) == nil)
        #expect(detector.observe(asleep: .seconds(103)) == nil)  // under 5 s: absorbed
        #expect(detector.observe(asleep: .seconds(160)) == .seconds(60))
        #expect(detector.observe(asleep: .seconds(160)) == nil)  // the same sleep, not again
        #expect(detector.observe(asleep: .milliseconds(166_500)) == .milliseconds(6500))
    }

    @Test func theSystemsTimeAsleepIsNeverNegativeAndNeverShrinks() {
        let first = SleepDetector.systemTimeAsleep()
        let second = SleepDetector.systemTimeAsleep()
        #expect(first >= .zero)
        // The two clocks are read one after the other: allow their reading order's microseconds.
        #expect(second >= first - .milliseconds(1))
    }
}

/// The manager reports a detected system sleep as `app.resumed`, decided with the trigger that
/// woke it; the default policy then refreshes the registration.
@Suite(.timeLimit(.minutes(3)))
struct SystemSleepManagerTests {
    let clock = ManualClock()
    /// The machine's time asleep, as the test wants it.
    final class Asleep: Sendable {
        let total = Mutex(Duration.seconds(40))
    }
    let asleep = Asleep()

    @Test func aSleepSeenWhenATriggerArrivesIsReportedAsResumed() async throws {
        let source = ScriptedNetworkSource(clock: clock)
        let plugin = RecordingPlugin()
        let manager = ResilienceManager(
            source: source, plugins: [plugin], clock: clock,
            configuration: .init(randomSeed: 3, timeAsleep: { [asleep] in asleep.total.withLock { $0 } }),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        await manager.register(ClientService(id: "a.reg", kind: .registration, account: "a"))
        let events = EventRecorder.recording(manager.events())
        let group = ServiceGroup(services: [manager], logger: Logger(label: "test"))
        let run = Task { try await group.run() }
        try await events.wait { $0.contains { $0.decisionTrigger == .started } }

        asleep.total.withLock { $0 += .seconds(2) }  // not a sleep
        await manager.pushTokenChanged()
        try await events.wait { $0.contains { $0.decisionTrigger == .pushTokenChanged } }
        #expect(!events.recorded.contains { $0.decisionTrigger == .app(.resumed) })

        asleep.total.withLock { $0 += .seconds(3600) }  // an hour in suspend
        await manager.pushTokenChanged()
        let items = try await events.wait { $0.contains { $0.decisionTrigger == .app(.resumed) } }
        let resumed = items.compactMap { event -> [PlannedAction]? in
            if case .decision(.app(.resumed), _, let actions, _) = event { actions } else { nil }
        }
        #expect(resumed.count == 1)
        #expect(resumed.first?.map(\.kind) == [.refreshRegistration])
        await group.triggerGracefulShutdown()
        try await run.value
    }
}

extension ResilienceEvent {
    fileprivate var decisionTrigger: Trigger? {
        if case .decision(let trigger, _, _, _) = self { trigger } else { nil }
    }
}
