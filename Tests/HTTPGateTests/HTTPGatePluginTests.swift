import HTTPGate
import ResilienceCore
import ResilienceTesting
import Testing

/// The gate and its plugin with a real URLSession against a real HTTP/1.1 server on loopback.
@Suite(.timeLimit(.minutes(3)))
struct HTTPGatePluginTests {
    let service: ServiceID = "api.http"

    @Test func drainWaitsForTheSlowRequestInFlightWhichCompletesWith200() async throws {
        try await withSlowServer { server in
            let journal = Journal()
            let gate = HTTPGate(service: service, logger: testLogger, onClosed: { journal.append("onClosed") })
            let plugin = try await openedPlugin(gate)

            let slow = Task {
                try await gate.perform {
                    let status = try await fetch(server.url(slowMilliseconds: 700))
                    journal.append("response \(status)")
                }
            }
            #expect(try await eventually { server.requests == 1 && gate.inFlight == 1 })
            try await plugin.perform(action(.drainHTTP, service), context: context())
            journal.append("drained")

            try await slow.value
            #expect(journal.all == ["response 200", "onClosed", "drained"])
            #expect(gate.inFlight == 0)
        }
    }

    @Test func requestsDuringAndAfterADrainAreRefusedAndNeverReachTheServer() async throws {
        try await withSlowServer { server in
            let gate = HTTPGate(service: service, logger: testLogger)
            let plugin = try await openedPlugin(gate)
            // Slow enough that the drain is still waiting for it when the next request is refused,
            // even on a loaded machine (at 700 ms it sometimes finished first).
            let slow = Task { try await get(server.url(slowMilliseconds: 3000), through: gate) }
            #expect(try await eventually { server.requests == 1 && gate.inFlight == 1 })
            let drain = Task { try await plugin.perform(action(.drainHTTP, service), context: context()) }
            #expect(try await eventually { !gate.isOpen })

            let during = await #expect(throws: HTTPGateClosed.self) {
                _ = try await get(server.url(slowMilliseconds: 0), through: gate)
            }
            #expect(during?.phase == .draining)
            #expect(during?.reason == "closed while the app is in background")
            #expect(during?.closedBy == "app.entered-background")
            #expect(during?.description.contains("draining") == true)

            try await drain.value
            #expect(try await slow.value == 200)
            let after = await #expect(throws: HTTPGateClosed.self) {
                _ = try await get(server.url(slowMilliseconds: 0), through: gate)
            }
            #expect(after?.phase == .closed)
            #expect(server.requests == 1)
        }
    }

    @Test func aGateStartsClosedAndOpenHTTPLetsRequestsThroughAgain() async throws {
        try await withSlowServer { server in
            let journal = Journal()
            let gate = HTTPGate(
                service: service, logger: testLogger, onOpened: { journal.append("onOpened") },
                onClosed: { journal.append("onClosed") })
            let plugin = HTTPGatePlugin(gates: [gate])
            let unopened = await #expect(throws: HTTPGateClosed.self) {
                _ = try await get(server.url(slowMilliseconds: 0), through: gate)
            }
            #expect(unopened?.reason == "not opened yet")

            try await plugin.perform(action(.openHTTP, service, trigger: .started), context: context())
            #expect(try await get(server.url(slowMilliseconds: 0), through: gate) == 200)
            try await plugin.perform(action(.drainHTTP, service), context: context())
            await #expect(throws: HTTPGateClosed.self) {
                _ = try await get(server.url(slowMilliseconds: 0), through: gate)
            }
            try await plugin.perform(action(.openHTTP, service, trigger: .app(.enteredForeground)), context: context())
            try await plugin.perform(action(.openHTTP, service, trigger: .network(.restored)), context: context())
            #expect(try await get(server.url(slowMilliseconds: 0), through: gate) == 200)

            #expect(server.requests == 2)
            #expect(journal.all == ["onOpened", "onClosed", "onOpened"])
        }
    }

    @Test func aDrainPastItsDeadlineReportsTheRequestsStillRunningAndClosesAnyway() async throws {
        try await withSlowServer { server in
            let journal = Journal()
            let gate = HTTPGate(service: service, logger: testLogger, onClosed: { journal.append("onClosed") })
            let plugin = try await openedPlugin(gate)
            let slow = Task { try await get(server.url(slowMilliseconds: 10_000), through: gate) }
            #expect(try await eventually { server.requests == 1 && gate.inFlight == 1 })

            let error = await #expect(throws: PluginError.self) {
                try await plugin.perform(
                    action(.drainHTTP, service, trigger: .shutdown), context: context(timeout: .milliseconds(300)))
            }
            #expect(error?.message.contains("1 request(s) still running") == true)
            #expect(error?.isRetryable == false)
            #expect(journal.all == ["onClosed"])
            #expect(gate.inFlight == 1)
            let refused = await #expect(throws: HTTPGateClosed.self) {
                _ = try await get(server.url(slowMilliseconds: 0), through: gate)
            }
            #expect(refused?.reason == "closed for shutdown")

            slow.cancel()
            _ = await slow.result
            #expect(gate.inFlight == 0)
        }
    }

    @Test func cancellingARequestInFlightDecrementsTheCountAndEndsTheDrain() async throws {
        try await withSlowServer { server in
            let gate = HTTPGate(service: service, logger: testLogger)
            let plugin = try await openedPlugin(gate)
            let slow = Task { try await get(server.url(slowMilliseconds: 10_000), through: gate) }
            #expect(try await eventually { server.requests == 1 && gate.inFlight == 1 })
            let drain = Task { try await plugin.perform(action(.drainHTTP, service), context: context()) }
            #expect(try await eventually { !gate.isOpen })

            slow.cancel()
            await #expect(throws: (any Error).self) { _ = try await slow.value }
            #expect(gate.inFlight == 0)
            try await drain.value
        }
    }

    @Test func twentyConcurrentRequestsAreCountedExactlyAndTheDrainWaitsForAll() async throws {
        try await withSlowServer { server in
            let gate = HTTPGate(service: service, logger: testLogger)
            let plugin = try await openedPlugin(gate)
            let requests = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<20 {
                        group.addTask { try await get(server.url(slowMilliseconds: 500), through: gate) }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            }
            #expect(try await eventually { server.requests == 20 && gate.inFlight == 20 })

            try await plugin.perform(action(.drainHTTP, service), context: context())
            #expect(gate.inFlight == 0)
            #expect(try await requests.value == Array(repeating: 200, count: 20))
            #expect(server.requests == 20)
        }
    }

    /// The drain's deadline runs on the clock the context lends, not the wall clock.
    @Test func theDrainDeadlineRunsOnTheContextsClock() async throws {
        try await withSlowServer { server in
            let clock = ManualClock()
            let gate = HTTPGate(service: service, logger: testLogger)
            let plugin = try await openedPlugin(gate)
            let slow = Task { try await get(server.url(slowMilliseconds: 10_000), through: gate) }
            #expect(try await eventually { server.requests == 1 && gate.inFlight == 1 })

            let manualContext = PluginContext(
                logger: testLogger, deadline: clock.now + .seconds(10), network: .empty,
                path: NetworkPath(status: .satisfied), epoch: .initial, now: clock.now, clock: clock)
            let drain = Task { try await plugin.perform(action(.drainHTTP, service), context: manualContext) }
            await clock.waitForSleepers(count: 1)
            #expect(clock.nextDeadline == clock.now + .seconds(9))
            clock.advance(by: .seconds(9))
            let error = await #expect(throws: PluginError.self) { try await drain.value }
            #expect(error?.message.contains("1 request(s) still running") == true)

            slow.cancel()
            _ = await slow.result
            #expect(gate.inFlight == 0)
        }
    }
}
