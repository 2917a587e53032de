import Logging
import ResilienceCore
import ResilienceRuntime
import ResilienceTesting

/// A plugin that does nothing, so the figures are the runtime's own cost.
private struct NullPlugin: ResiliencePlugin {
    let id = "null"
    func performs(_ kind: ActionKind, for service: ServiceID) -> Bool { true }
    func perform(_ action: PlannedAction, context: PluginContext) async throws {}
}

private let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

private func makeExecutor() -> ActionExecutor {
    ActionExecutor(plugins: [NullPlugin()], configuration: .init(randomSeed: 1), logger: quiet)
}

private func action(_ kind: ActionKind, _ service: ServiceID, after: Set<ServiceID> = []) -> PlannedAction {
    PlannedAction(kind: kind, service: service, trigger: .network(.restored), after: after, source: "bench")
}

private func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) * 1e-9
}

/// The best of `rounds` timings, in nanoseconds.
private func best(_ rounds: Int, _ body: () async -> Void) async -> Double {
    var fastest = Double.infinity
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        await body()
        fastest = min(fastest, nanoseconds(ContinuousClock.now - start))
    }
    return fastest
}

private func format(_ value: Double) -> String {
    let rounded = (value * 10).rounded() / 10
    return "\(rounded)"
}

/// Prints the runtime figures BENCHMARKS.md quotes: executor overhead per decision and per
/// action, throughput of 10,000 services reacting to one restore, and scheduler wake-ups per
/// hour for 100 background services (computed on a manual clock, so exact).
func runRuntimeBenchmarks() async {
    let count = 10_000
    let services = (0..<count).map { ServiceID("svc\($0)") }

    // One decision = one submit of a one-action batch to a busy service: the newest replaces the
    // pending one, so this is the bookkeeping cost of a decision without running anything new.
    let perDecision = await best(5) {
        let executor = makeExecutor()
        for i in 0..<count { await executor.submit([action(.register, services[i % 8])], epoch: .initial) }
        await executor.waitUntilIdle()
    }
    print(
        "executor: \(format(perDecision / Double(count))) ns per decision (\(count) one-action decisions, 8 services)")

    // One action = submitted, started, performed by a no-op plugin, reported, metrics recorded.
    let perAction = await best(5) {
        let executor = makeExecutor()
        await executor.submit(services.map { action(.register, $0) }, epoch: .initial)
        await executor.waitUntilIdle()
    }
    print("executor: \(format(perAction / Double(count))) ns per action (\(count) services, no-op plugin)")

    // One restore: 10,000 registrations, then 10,000 subscriptions each ordered after its account's
    // registration, all from a single networkChanged(restored) call.
    let lost = NetworkPath(status: .unsatisfied(.noCarrier))
    let restored = NetworkPath(status: .satisfied)
    var batch = services.map { action(.register, $0) }
    batch += services.map { action(.subscribe, ServiceID("\($0).sub"), after: [$0]) }
    let restoreBatch = batch
    let restore = await best(5) {
        let executor = makeExecutor()
        await executor.networkChanged(lost, network: .empty, epoch: NetworkEpoch(rawValue: 1))
        await executor.networkChanged(restored, network: .empty, epoch: NetworkEpoch(rawValue: 1), then: restoreBatch)
        await executor.waitUntilIdle()
    }
    let actions = Double(restoreBatch.count)
    print(
        "restore: \(restoreBatch.count) actions for \(count) accounts in \(format(restore / 1e6)) ms"
            + " = \(Int(actions / (restore / 1e9))) actions/s")

    await keepAliveWakeUps(background: true)
    await keepAliveWakeUps(background: false)
}

/// 100 registrations of 3,600 s, registered at staggered instants over the first hour; every
/// wake-up refreshes its batch for another 3,600 s. Simulated for 24 h on a manual clock.
private func keepAliveWakeUps(background: Bool) async {
    let clock = ManualClock()
    let (stream, continuation) = AsyncStream<[ServiceID]>.makeStream()
    let scheduler = WakeUpScheduler(clock: clock, onDue: { refresh, _ in continuation.yield(refresh) })
    await scheduler.setAppState(background ? .background : .foreground)
    let lifetime = Duration.seconds(3600)
    for i in 0..<100 {
        await scheduler.setExpiry(clock.now + .seconds(36 * i) + lifetime, for: ServiceID("reg\(i)"))
    }
    let hours = 24
    let end = clock.now + .seconds(3600 * hours)
    var iterator = stream.makeAsyncIterator()
    var refreshes = 0
    while let next = await scheduler.nextWakeUp, next <= end {
        clock.advance(to: next)
        guard let due = await iterator.next() else { break }
        refreshes += due.count
        for id in due { await scheduler.setExpiry(clock.now + lifetime, for: id) }
    }
    let wakeUps = await scheduler.wakeUps
    let perHour = Double(wakeUps) / Double(hours)
    print(
        "wake-ups (\(background ? "background" : "foreground")): 100 services, \(format(perHour)) wake-ups/h"
            + " (\(wakeUps) in \(hours) h, \(refreshes) refreshes; one timer per service: 100/h)")
}
