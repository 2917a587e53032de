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

    @Test func noFlowPingFollowsASuccessfulRegisterOnTheSameFlow() async throws {
        let reg = ClientService(id: "reg", kind: .registration, flowPingInterval: .seconds(30))
        let (manager, events, group, run) = try await start([reg])
        let armed = try #require(await manager.status().nextWakeUp)
        clock.advance(by: .seconds(20))
        let registeredAt = clock.now
        await source.change(.address, to: ScriptedNetworkSource.satisfiedPath)
        try await events.wait { $0.contains { $0.action?.isSucceeded == true && $0.action?.action.kind == .register } }
        let rearmed = try #require(await nextWakeUp(of: manager, after: armed))
        #expect(rearmed >= registeredAt + .seconds(24))
        // The old deadline passes without a ping: the REGISTER's response proved the flow.
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
}
