import Logging
import NetlinkMonitor
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

extension EventRecorder {
    /// The first element at or after `since` that matches within `timeout`; nil when none came
    /// (the namespace tests also check that something does *not* happen).
    func first(
        since: Int = 0, within timeout: Duration = .seconds(15),
        where predicate: @escaping @Sendable (Element) -> Bool
    ) async -> Element? {
        try? await first(since: since, timeout: timeout, where: predicate)
    }
}

/// A monitor running inside a namespace, with its streams recorded from the start.
struct MonitorHarness {
    let monitor: NetlinkMonitor
    let events: EventRecorder<NetworkEvent>
    let transitions: EventRecorder<PathTransition>

    /// Starts a monitor in `network`'s client, runs `body`, and shuts the monitor down whatever happens.
    static func with<R>(
        _ network: OnlineLab, holdDown: Duration = .zero, filter: InterfaceFilter = .all,
        receiveBufferSize: Int = 4 << 20, _ body: (MonitorHarness) async throws -> R
    ) async throws -> R {
        var logger = Logger(label: "fault-injection")
        logger.logLevel = .warning
        let monitor = NetlinkMonitor(
            filter: filter, holdDown: holdDown, receiveBufferSize: receiveBufferSize, namespace: network.namespace,
            logger: logger)
        let harness = MonitorHarness(
            monitor: monitor, events: .recording(monitor.events()), transitions: .recording(monitor.transitions()))
        do {
            try await monitor.start()
            let result = try await body(harness)
            await monitor.shutdown()
            return result
        } catch {
            await monitor.shutdown()
            throw error
        }
    }

    /// The usual set-up: a fresh ``OnlineLab``, a monitor in its client, and its satisfied
    /// `.initial` already seen.
    static func online<R: Sendable>(
        holdDown: Duration = .zero, receiveBufferSize: Int = 4 << 20,
        _ body: (OnlineLab, MonitorHarness) async throws -> R
    ) async throws -> R {
        try await OnlineLab.with { network in
            try await with(network, holdDown: holdDown, receiveBufferSize: receiveBufferSize) { harness in
                let initial = try await harness.transition(.initial)
                #expect(initial.path.isSatisfied)
                #expect(initial.path.primaryInterface?.name == "veth0")
                return try await body(network, harness)
            }
        }
    }

    /// Awaits a `restored` transition since `mark` and fails the test when none comes.
    @discardableResult
    func restored(since mark: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws -> PathTransition {
        let hit = await transitions.first(since: mark) { if case .restored = $0.kind { true } else { false } }
        return try #require(hit, "no restored transition", sourceLocation: sourceLocation)
    }

    /// Awaits a transition of the given kind since `mark` and fails the test when none comes.
    @discardableResult
    func transition(
        _ kind: PathTransition.Kind, since mark: Int = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> PathTransition {
        let hit = await transitions.first(since: mark) { $0.kind == kind }
        return try #require(hit, "no \(kind) transition", sourceLocation: sourceLocation)
    }

    /// Awaits a raw event matching `predicate` since `mark` and fails the test when none comes.
    @discardableResult
    func event(
        since mark: Int = 0, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        where predicate: @escaping @Sendable (NetworkEvent.Kind) -> Bool
    ) async throws -> NetworkEvent {
        let hit = await events.first(since: mark) { predicate($0.kind) }
        return try #require(hit, "no event: \(what)", sourceLocation: sourceLocation)
    }

    /// The cache must equal a fresh dump once the namespace is quiet. The kernel finishes some
    /// work asynchronously (IPv6 link-local addresses and DAD after a link comes up), so this
    /// compares up to 50 times, 100 ms apart, and fails with the last difference.
    func expectCacheMatchesDump(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var difference: [NetworkEvent.Kind] = []
        for _ in 0..<50 {
            let check = try await monitor._cacheAndFreshDump()
            difference = check.cache.changes(to: check.fresh)
            if difference.isEmpty { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("cache differs from a fresh dump: \(difference)", sourceLocation: sourceLocation)
    }
}
