import ResilienceCore
import ResilienceRuntime
import ResilienceTesting
import Testing

/// The executor's suspension hold (`ActionExecutor.setSuspended`): what is held, what is not, and
/// how held work ends.
@Suite(.timeLimit(.minutes(3)))
struct ExecutorSuspensionTests {
    let clock = ManualClock()
    let plugin = RecordingPlugin()
    static let unavailable = PluginError("503 Service Unavailable")

    func makeExecutor() -> (ActionExecutor, EventRecorder<ActionEvent>) {
        let executor = ActionExecutor(
            plugins: [plugin], clock: clock, configuration: .init(randomSeed: 42), path: upPath, logger: quiet)
        return (executor, EventRecorder.recording(executor.events()))
    }

    /// `reg`'s REGISTER failed once and waits in its backoff.
    func failOnce(_ executor: ActionExecutor, _ events: EventRecorder<ActionEvent>, _ service: ServiceID) async throws {
        plugin.program([.fail(Self.unavailable), .succeed], for: service)
        await executor.submit([planned(.register, service)], epoch: .initial)
        try await events.wait { $0.contains { $0.action.service == service && $0.isRetrying } }
    }

    func attempts(_ service: ServiceID) -> Int { plugin.starts.filter { $0.action.service == service }.count }

    @Test func aDecisionTakenWhileSuspendedReplacesTheHeldWorkAndRuns() async throws {
        let (executor, events) = makeExecutor()
        try await failOnce(executor, events, "reg")
        let change = await executor.setSuspended(true, epoch: .initial)
        #expect(change == .init(held: ["reg"]))
        // A rule the policy gives `when: [suspended]` (here: a network change it acts on).
        plugin.program([.fail(Self.unavailable), .succeed], for: "reg")
        await executor.submit([planned(.register, "reg", trigger: .network(.changed(.address)))], epoch: .initial)
        let retrying = try await events.first(since: 2, "the new decision's retry") {
            $0.isRetrying && $0.action.trigger == .network(.changed(.address))
        }
        #expect(retrying.retryAt != nil, "its retry is kept alive while suspended")
        clock.advance(by: .seconds(5))
        try await events.wait { $0.contains { $0.isSucceeded } }
        #expect(events.recorded.contains { $0.outcome == .superseded && $0.action.trigger == .network(.restored) })
        #expect(attempts("reg") == 3)
    }

    @Test func aServiceKeptAwakeLaterRunsItsHeldRetryAtOnce() async throws {
        let (executor, events) = makeExecutor()
        try await failOnce(executor, events, "reg")
        await executor.setSuspended(true, epoch: .initial)
        #expect(await executor.status()["reg"]?.waitingForWakeUp == true)
        // A call of the account appeared: the manager keeps the account awake.
        let change = await executor.setSuspended(true, keepingAwake: ["reg"], epoch: .initial)
        #expect(change == .init(released: ["reg"]))
        try await events.wait { $0.contains { $0.isSucceeded } }
        #expect(attempts("reg") == 2)
    }

    /// A push woke the account: its own REGISTER retries while suspended; when the wake window
    /// ends, the retry still waiting is held like work decided before the suspension.
    @Test func aRetryOfAWokenServiceIsHeldWhenItSleepsAgain() async throws {
        let (executor, events) = makeExecutor()
        await executor.setSuspended(true, epoch: .initial)
        await executor.setSuspended(true, keepingAwake: ["reg"], epoch: .initial)
        try await failOnce(executor, events, "reg")
        #expect(await executor.status()["reg"]?.retryAt != nil, "awake, its retry keeps its time")
        #expect(await executor.setSuspended(true, epoch: .initial) == .init(held: ["reg"]))
        let status = await executor.status()["reg"]
        #expect(status?.waitingForWakeUp == true && status?.retryAt == nil)
        clock.advance(by: .seconds(600))
        #expect(attempts("reg") == 1)
    }

    /// An attempt running when the app is suspended ends on its own (here: its timeout); its
    /// retry is held, with no instant, until the app wakes.
    @Test func anAttemptRunningAtTheSuspensionEndsAndItsRetryIsHeld() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.hang, .succeed], for: "reg")
        await executor.submit([planned(.register, "reg")], epoch: .initial)
        await plugin.waitForStarts(count: 1)
        #expect(await executor.setSuspended(true, epoch: .initial).isEmpty, "nothing waits yet")
        await clock.waitForSleepers(count: 1)  // the attempt's timeout
        clock.advance(by: .seconds(30))
        let retrying = try await events.first("the retry after the timeout") { $0.isRetrying }
        #expect(retrying.retryAt == nil)
        #expect(await executor.status()["reg"]?.waitingForWakeUp == true)
        clock.advance(by: .seconds(600))
        #expect(attempts("reg") == 1)
        #expect(await executor.setSuspended(false, epoch: .initial) == .init(released: ["reg"]))
        try await events.wait { $0.contains { $0.isSucceeded } }
        #expect(attempts("reg") == 2)
    }

    @Test func localActionsAreNeverHeld() async throws {
        let (executor, events) = makeExecutor()
        plugin.program([.fail(Self.unavailable), .succeed], for: "http")
        await executor.submit([planned(.drainHTTP, "http")], epoch: .initial)
        try await events.wait { $0.contains { $0.isRetrying } }
        #expect(await executor.setSuspended(true, epoch: .initial).isEmpty)
        clock.advance(by: .seconds(5))
        try await events.wait { $0.contains { $0.isSucceeded } }
        #expect(attempts("http") == 2)
    }
}
