import HTTPGate
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Testing

/// The plugin under the real `ResilienceManager` with the default policy, on the continuous clock,
/// against the loopback server.
@Suite(.timeLimit(.minutes(3)))
struct HTTPGateManagerTests {
    @Test func backgroundDrainsAndRefusesThenForegroundReopens() async throws {
        try await withSlowServer { server in
            let journal = Journal()
            let gate = HTTPGate(
                service: "api.http", logger: testLogger, onOpened: { journal.append("onOpened") },
                onClosed: { journal.append("onClosed") })
            let plugin = HTTPGatePlugin(gates: [gate])
            let manager = ResilienceManager(
                source: ScriptedNetworkSource(), plugins: [plugin],
                configuration: .init(randomSeed: 7, timeAsleep: { .zero }), logger: testLogger)
            for service in plugin.services { await manager.register(service) }
            var events = manager.events().makeAsyncIterator()
            let group = ServiceGroup(services: [manager], logger: testLogger)
            let run = Task { try await group.run() }

            // Started in the foreground: start-open-http.
            #expect(await next(&events, .openHTTP, .started) == .succeeded)
            #expect(try await get(server.url(slowMilliseconds: 0), through: gate) == 200)

            // A slow request is in flight when the app enters the background.
            let slow = Task {
                try await gate.perform {
                    let status = try await fetch(server.url(slowMilliseconds: 700))
                    journal.append("response \(status)")
                }
            }
            #expect(try await eventually { server.requests == 2 && gate.inFlight == 1 })
            await manager.setAppState(.background)
            #expect(await next(&events, .drainHTTP, .app(.enteredBackground)) == .succeeded)
            try await slow.value
            #expect(journal.all == ["onOpened", "response 200", "onClosed"])
            let refused = await #expect(throws: HTTPGateClosed.self) {
                _ = try await get(server.url(slowMilliseconds: 0), through: gate)
            }
            #expect(refused?.reason == "closed while the app is in background")
            #expect(server.requests == 2)

            await manager.setAppState(.foreground)
            #expect(await next(&events, .openHTTP, .app(.enteredForeground)) == .succeeded)
            #expect(try await get(server.url(slowMilliseconds: 0), through: gate) == 200)
            #expect(server.requests == 3)
            #expect(journal.all == ["onOpened", "response 200", "onClosed", "onOpened"])

            await group.triggerGracefulShutdown()
            try await run.value
            #expect(!gate.isOpen)
        }
    }

    /// The outcome of the first attempt of `kind` for `trigger` that ends (anything but `started`).
    private func next(
        _ events: inout AsyncStream<ResilienceEvent>.Iterator, _ kind: ActionKind, _ trigger: Trigger
    ) async -> ActionOutcome? {
        while let event = await events.next() {
            guard case .action(let action) = event, action.action.kind == kind, action.action.trigger == trigger,
                action.outcome != .started
            else { continue }
            return action.outcome
        }
        return nil
    }
}
