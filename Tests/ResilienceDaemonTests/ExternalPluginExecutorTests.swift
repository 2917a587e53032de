import ResilienceCore
import ResilienceDaemon
import ResilienceRuntime
import ResilienceTesting
import Testing

/// An external plugin, written against the protocol alone (JSON lines on a real unix socket), is
/// carried out by the executor exactly as a Swift plugin: ordering between services, retries
/// with backoff, one attempt in flight, timeouts, disconnection and the suspension hold. The
/// manager runs on a `ManualClock`, so backoff and timeouts pass without real time.
extension ActionEvent {
    /// When a retrying outcome plans the next attempt; nil for any other outcome.
    var retryAt: ContinuousClock.Instant? {
        if case .retrying(let at, _) = outcome { return at }
        return nil
    }
}

@Suite(.timeLimit(.minutes(3)))
struct ExternalPluginExecutorTests {
    /// Waits for the manager's `started` decision, so a service declared afterwards is not
    /// brought up by it.
    func started(_ rig: ExternalPluginRig) async throws {
        try await rig.events.wait("started decided") { $0.contains { $0.decision?.trigger == .started } }
    }

    /// A plugin of `alice.registration` performing `actions`, connected after `started`; the
    /// address changes and the first perform message is returned.
    func changedAddress(
        _ rig: ExternalPluginRig, actions: [String]
    ) async throws -> (ScriptedExternalPlugin, ScriptedExternalPlugin.Message) {
        try await started(rig)
        let plugin = try await rig.connect(actions: actions)
        try await rig.waitUntilTracked("alice.registration")
        await rig.changeAddress()
        return (plugin, try #require(await plugin.next("perform")))
    }

    func outcome(_ plugin: ScriptedExternalPlugin, _ id: Int, _ result: String, _ extra: String = "") async {
        await plugin.send(type: "outcome", #""id":\#(id),"result":"\#(result)""# + (extra.isEmpty ? "" : "," + extra))
    }

    @Test func actionsArriveInThePolicysOrderWithTheTriggerAndThePathsAroundIt() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            try await started(rig)
            let plugin = try await rig.connect(call: true)
            try await rig.waitUntilTracked("alice.call-1")
            await rig.changeAddress()
            var seen: [String] = []
            // Each is answered only once it arrived: were the call's re-INVITE not ordered after
            // the registration's actions, it would come second, beside the first.
            for _ in 0..<3 {
                let perform = try #require(await plugin.next("perform"))
                seen.append("\(perform.action) \(perform.service)")
                #expect(perform.trigger == "network.changed.address")
                #expect(perform.attempt == 1)
                let path = perform.fields["path"] as? [String: Any]
                let previous = perform.fields["previous_path"] as? [String: Any]
                #expect(path?["addresses"] as? [String] == ["198.18.0.3"])
                #expect(previous?["addresses"] as? [String] == ["198.18.0.2"])
                await outcome(plugin, perform.id, "succeeded")
            }
            #expect(
                seen == [
                    "close-stale-transports alice.registration", "register alice.registration",
                    "reinvite-call alice.call-1",
                ])
            try await rig.events.wait(count: 3, "three actions succeeded") { $0.action?.outcome == .succeeded }
            // unregister-old-contact was not declared: an optional step no plugin performs is skipped.
            try await rig.events.wait("the old contact's removal skipped") {
                $0.contains { $0.action?.action.kind == .unregisterOldContact && $0.action?.outcome == .skipped }
            }
        }
    }

    @Test func aFailureItReportsIsRetriedAfterTheBackoffAsTheNextAttempt() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let (plugin, first) = try await changedAddress(rig, actions: ["register"])
            #expect(first.action == "register" && first.attempt == 1)
            await outcome(plugin, first.id, "failed", #""reason":"503 Service Unavailable","retryable":true"#)
            let retrying = try await rig.events.first(where: { $0.action?.retryAt != nil })
            #expect("\(retrying.action!.outcome)".contains("503 Service Unavailable"))
            rig.clock.advance(to: retrying.action!.retryAt!)
            let second = try #require(await plugin.next("perform"))
            #expect(second.action == "register" && second.attempt == 2 && second.id != first.id)
            await outcome(plugin, second.id, "succeeded")
            try await rig.events.wait("the retry succeeded") {
                $0.contains { $0.action?.attempt == 2 && $0.action?.outcome == .succeeded }
            }
            // A failure it calls permanent is reported once, not retried.
            await rig.changeAddress(to: "198.18.0.4")
            let third = try #require(await plugin.next("perform"))
            await outcome(plugin, third.id, "failed", #""reason":"403 Forbidden","retryable":false"#)
            try await rig.events.wait("the permanent failure") {
                $0.contains {
                    if case .failed(let error) = $0.action?.outcome { return error.message == "403 Forbidden" }
                    return false
                }
            }
        }
    }

    @Test func anUnansweredActionTimesOutIsWithdrawnAndItsLateOutcomeRefused() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let (plugin, first) = try await changedAddress(rig, actions: ["register"])
            try await rig.events.wait("started") { $0.contains { $0.action?.outcome == .started } }
            rig.clock.advance(by: ExternalPluginRig.actionTimeout)
            let cancel = try #require(await plugin.next("cancel"))
            #expect(cancel.id == first.id)
            try await rig.events.wait("timed out") { $0.contains { $0.action?.outcome == .timedOut } }
            await outcome(plugin, first.id, "succeeded")
            let refused = try #require(await plugin.next("error"))
            #expect(refused.reason.hasPrefix("id: no action \(first.id) in flight"))
            let retrying = try await rig.events.first(where: { $0.action?.retryAt != nil })
            rig.clock.advance(to: retrying.action!.retryAt!)
            let second = try #require(await plugin.next("perform"))
            #expect(second.attempt == 2)
            await outcome(plugin, second.id, "succeeded")
        }
    }

    @Test func aPluginThatDisconnectsFailsItsActionAndItsServiceWaitsForItsReturn() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let (plugin, _) = try await changedAddress(rig, actions: ["register"])
            plugin.disconnect()
            let retrying = try await rig.events.first(where: { $0.action?.retryAt != nil })
            #expect("\(retrying.action!.outcome)".contains("disconnected"))
            #expect(await rig.manager.status().services.map(\.id) == ["alice.registration"])
            rig.clock.advance(to: retrying.action!.retryAt!)
            try await rig.events.wait("the retry started, waiting for the plugin") {
                $0.contains { $0.action?.attempt == 2 && $0.action?.outcome == .started }
            }
            let back = try await rig.connect(actions: ["register"])
            let second = try #require(await back.next("perform"))
            #expect(second.action == "register" && second.attempt == 2)
            await outcome(back, second.id, "succeeded")
            try await rig.events.wait("succeeded after the return") {
                $0.contains { $0.action?.attempt == 2 && $0.action?.outcome == .succeeded }
            }
        }
    }

    /// The retry in backoff is held while suspended (no attempt reaches the plugin however long
    /// it sleeps); waking decides `app.resumed`, whose refresh replaces the held REGISTER and
    /// reaches the plugin at once.
    @Test func aRetryIsHeldWhileSuspendedAndWakingReachesThePluginAtOnce() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let (plugin, first) = try await changedAddress(rig, actions: ["register", "refresh-registration"])
            await outcome(plugin, first.id, "failed", #""reason":"503""#)
            _ = try await rig.events.first(where: { $0.action?.retryAt != nil })
            await rig.manager.setAppState(.suspended)
            try await rig.events.wait("suspended") { $0.contains { $0.decision?.trigger == .app(.suspending) } }
            for _ in 0..<10 { rig.clock.advance(by: .seconds(60)) }  // far past every backoff
            await rig.manager.pushTokenChanged()  // decided after anything that fell due
            try await rig.events.wait("a later trigger") { $0.contains { $0.decision?.trigger == .pushTokenChanged } }
            #expect(!rig.events.recorded.contains { $0.action?.attempt == 2 }, "a retry ran while suspended")
            await rig.manager.setAppState(.background)
            let woken = try #require(await plugin.next("perform"), "\(rig.events.recorded.suffix(8))")
            #expect(woken.trigger == "app.resumed" && woken.action == "refresh-registration")
            await outcome(plugin, woken.id, "succeeded")
            try await rig.events.wait("the refresh succeeded") {
                $0.contains { $0.action?.action.kind == .refreshRegistration && $0.action?.outcome == .succeeded }
            }
        }
    }
}
