import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

extension ResilienceManagerTests {
    /// Waits (bounded, without a clock) until the manager's next wake-up differs from `old`.
    func nextWakeUp(of manager: ResilienceManager, after old: ContinuousClock.Instant?) async -> ContinuousClock
        .Instant?
    {
        for _ in 0..<10_000 {
            let next = await manager.status().nextWakeUp
            if next != old { return next }
            await Task.yield()
        }
        return old
    }

    /// With a 30 s flow ping armed, `activity` runs 20 s in: the ping must move to 24–30 s after
    /// it, no ping may be decided at the old deadline, and exactly one at the new one.
    func expectPingRearmed(by activity: (EventRecorder<ResilienceEvent>) async throws -> Void) async throws {
        let reg = ClientService(id: "reg", kind: .registration, flowPingInterval: .seconds(30))
        let (manager, events, group, run) = try await start([reg])
        let armed = try #require(await manager.status().nextWakeUp)
        clock.advance(by: .seconds(20))
        let activeAt = clock.now
        try await activity(events)
        let rearmed = try #require(await nextWakeUp(of: manager, after: armed))
        #expect(rearmed >= activeAt + .seconds(24))
        // The old deadline passes without a ping: the response proved the flow.
        clock.advance(to: armed)
        #expect(!events.recorded.contains { $0.decision?.trigger == .flowPingDue(["reg"]) })
        // And the re-armed one still pings: the guard above is not a scheduler that stopped.
        await clock.waitForSleepers(count: 1)
        clock.advance(to: rearmed)
        let items = try await events.wait { $0.contains { $0.decision?.trigger == .flowPingDue(["reg"]) } }
        // Exactly one ping: a timer still armed for the old deadline would have decided one first.
        #expect(items.filter { $0.decision?.trigger == .flowPingDue(["reg"]) }.count == 1)
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test func noFlowPingFollowsASuccessfulRegisterOnTheSameFlow() async throws {
        try await expectPingRearmed { events in
            await source.change(.address, to: ScriptedNetworkSource.satisfiedPath)
            try await events.wait {
                $0.contains { $0.action?.isSucceeded == true && $0.action?.action.kind == .register }
            }
        }
    }

    @Test func aResponseToAnUnplannedRequestRearmsTheFlowPingLikeASuccessfulAction() async throws {
        // No action runs: the plugin heard a response on the flow (a call's, a subscription's).
        try await expectPingRearmed { _ in sip.report(.flowActive(["reg"])) }
    }

    @Test func activityOnAServiceWithoutAFlowPingArmsNothing() async throws {
        let reg = ClientService(id: "reg", kind: .registration)
        let (manager, _, group, run) = try await start([reg])
        #expect(await manager.status().nextWakeUp == nil)
        sip.report(.flowActive(["reg", "unknown"]))
        // Reports are applied in order: once a later one shows, the activity report was applied.
        sip.report(.serviceChanged(ClientService(id: "reg", kind: .registration, flowPingInterval: .seconds(30))))
        let armed = try #require(await nextWakeUp(of: manager, after: nil))
        #expect(armed >= clock.now + .seconds(24))
        await group.triggerGracefulShutdown()
        try await run.value
    }
}
