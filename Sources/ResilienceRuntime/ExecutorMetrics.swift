import Metrics
import ResilienceCore
import Synchronization

/// The executor's swift-metrics instruments, created once per label and dimension set.
///
/// - `netres.actions` (counter; dimensions `plugin`, `kind`, `outcome`): every outcome but
///   `started`. `plugin` is the ``ResiliencePlugin/id`` of the plugin that performs the action
///   (as on its log lines), or `none` when no plugin performs it.
/// - `netres.action.latency` (timer; `kind`): trigger (submission) to the first attempt's start.
/// - `netres.action.duration` (timer; `kind`): one attempt, start to finish.
final class ExecutorMetrics: Sendable {
    private struct Instruments {
        var counters: [String: Counter] = [:]
        var latency: [ActionKind: Metrics.Timer] = [:]
        var duration: [ActionKind: Metrics.Timer] = [:]
    }
    private let instruments = Mutex(Instruments())
    private let factory: any MetricsFactory

    /// - Parameter factory: where instruments come from; nil for the bootstrapped `MetricsSystem`.
    init(factory: (any MetricsFactory)?) {
        self.factory = factory ?? MetricsSystem.factory
    }

    func count(plugin: String, kind: ActionKind, outcome: ActionOutcome) {
        let key = "\(plugin)|\(kind.rawValue)|\(outcome.label)"
        let counter = instruments.withLock { state in
            if let counter = state.counters[key] { return counter }
            let counter = Counter(
                label: "netres.actions",
                dimensions: [("plugin", plugin), ("kind", kind.rawValue), ("outcome", outcome.label)], factory: factory)
            state.counters[key] = counter
            return counter
        }
        counter.increment()
    }

    func recordLatency(kind: ActionKind, nanoseconds: Int64) {
        timer(kind, \.latency, label: "netres.action.latency").recordNanoseconds(nanoseconds)
    }

    func recordDuration(kind: ActionKind, nanoseconds: Int64) {
        timer(kind, \.duration, label: "netres.action.duration").recordNanoseconds(nanoseconds)
    }

    private func timer(
        _ kind: ActionKind, _ path: WritableKeyPath<Instruments, [ActionKind: Metrics.Timer]>, label: String
    ) -> Metrics.Timer {
        instruments.withLock { state in
            if let timer = state[keyPath: path][kind] { return timer }
            let timer = Metrics.Timer(label: label, dimensions: [("kind", kind.rawValue)], factory: factory)
            state[keyPath: path][kind] = timer
            return timer
        }
    }
}
