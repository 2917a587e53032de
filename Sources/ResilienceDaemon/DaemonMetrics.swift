import Metrics
public import Prometheus
public import ResilienceCore
public import ResilienceRuntime
public import SIPPlugin
import Synchronization

/// The metrics `netres run` exports, recorded into a Prometheus registry through swift-metrics.
///
/// The executor records its own (``factory`` is handed to the manager): `netres_actions`
/// by `plugin`, `kind` and `outcome`, and the `netres_action_latency` / `netres_action_duration`
/// histograms. ``observe(_:)`` adds, from the manager's event stream:
/// - `netres_transitions` by `kind` (initial, lost, restored, changed): the monitor's path
///   transitions;
/// - `netres_path_downtime` (histogram): how long the path was gone, per restore;
/// - `netres_recovery` (histogram): from a restore or change to each registration's first
///   successful register or refresh after it: how long a SIP service stayed down because of the network;
/// - `netres_registrations` by `outcome`: the SIP plugin's register and refresh attempts;
/// - `netres_flows_lost`: services whose flow the SIP plugin reported lost;
/// - from ``observe(push:)``, `netres_pushes` by `kind` (call, message, refresh): pushes received;
/// - from ``observeMessage()``, `netres_messages`: SIP MESSAGEs received;
/// - from ``observe(call:)``, `netres_call_events` by `state`. The SIP plugin records its own
///   call instruments into ``factory`` (`netres_calls_recovered`, `netres_calls_lost` by
///   `reason`, the `netres_call_recovery` histogram, with the long buckets here).
///
/// Every series named here is served from the start, at zero (the histograms empty), and so is
/// `netres_actions` for each SIP action kind with outcome `succeeded` and `failed`; other
/// outcomes and the per-kind latency and duration histograms appear when first recorded.
///
/// Names are swift-metrics labels with dots, written with underscores for Prometheus.
public final class DaemonMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory
    private let recovering = Mutex<[ServiceID: ContinuousClock.Instant]>([:])

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (String(name.map { $0 == "." || $0 == "-" ? "_" : $0 }), labels)
        }
        let long: [Duration] = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300].map { .milliseconds(Int64($0 * 1000)) }
        // Keyed by the sanitized name: the factory looks buckets up after sanitizing the label.
        factory.durationHistogramBuckets = [
            "netres_recovery": long, "netres_path_downtime": long, "netres_call_recovery": long,
        ]
        self.registry = registry
        self.factory = factory
        // Served from the start, at zero: a dashboard or an alert on any of them sees 0, not "no
        // data", before the first event. The executor's `netres_actions` appear per action kind
        // as the first action of that kind ends.
        _ = timer("netres.recovery")
        _ = timer("netres.path.downtime")
        for kind in ["initial", "lost", "restored", "changed"] { _ = counter("netres.transitions", [("kind", kind)]) }
        for outcome in Self.registrationOutcomes { _ = counter("netres.registrations", [("outcome", outcome)]) }
        _ = counter("netres.flows.lost", [])
        for state in Self.callStates { _ = counter("netres.call.events", [("state", state.rawValue)]) }
        for kind in PushKind.allCases { _ = counter("netres.pushes", [("kind", kind.rawValue)]) }
        _ = counter("netres.messages", [])
        // The executor's counter for the daemon's one plugin (its id is "sip"): each SIP action's
        // successes and permanent failures, the pair alerts compare.
        for kind in SIPPlugin.actions.sorted() {
            for outcome in ["succeeded", "failed"] {
                _ = counter("netres.actions", [("plugin", "sip"), ("kind", kind.rawValue), ("outcome", outcome)])
            }
        }
    }

    /// The outcomes a register or refresh can end with, as `netres_registrations` labels them.
    static let registrationOutcomes = [
        ActionOutcome.succeeded, .failed(PluginError("")), .retrying(at: nil, error: PluginError("")), .cancelled,
        .superseded, .timedOut,
    ].map(\.label)

    /// Every state `netres_call_events` counts.
    static let callStates = CallPhase.allCases

    /// Counts one call event of the SIP plugin (its recoveries and losses it counts itself).
    public func observe(call event: CallEvent) {
        counter("netres.call.events", [("state", event.phase.rawValue)]).increment()
    }

    /// Counts one push the daemon received.
    public func observe(push: Push) {
        counter("netres.pushes", [("kind", push.kind.rawValue)]).increment()
    }

    /// Counts one MESSAGE an account received.
    public func observeMessage() { counter("netres.messages", []).increment() }

    /// Counts what one manager event says; call for every event, in order.
    public func observe(_ event: ResilienceEvent) {
        switch event {
        case .transition(let transition):
            let kind: String
            switch transition.kind {
            case .initial: kind = "initial"
            case .lost: kind = "lost"
            case .restored(let downtime):
                kind = "restored"
                timer("netres.path.downtime").recordNanoseconds(downtime.nanosecondsValue)
            case .changed: kind = "changed"
            }
            counter("netres.transitions", [("kind", kind)]).increment()
        case .decision(.network(.restored), _, let actions, let at),
            .decision(.network(.changed), _, let actions, let at):
            let registering = actions.filter { $0.kind == .register || $0.kind == .refreshRegistration }
            recovering.withLock { pending in
                for action in registering where pending[action.service] == nil { pending[action.service] = at }
            }
        case .decision(.flowLost(let ids), _, _, _):
            counter("netres.flows.lost", []).increment(by: ids.count)
        case .action(let action) where action.action.kind == .register || action.action.kind == .refreshRegistration:
            guard action.outcome != .started else { return }
            counter("netres.registrations", [("outcome", action.outcome.label)]).increment()
            guard action.outcome == .succeeded else { return }
            if let since = recovering.withLock({ $0.removeValue(forKey: action.action.service) }) {
                timer("netres.recovery").recordNanoseconds((action.at - since).nanosecondsValue)
            }
        default:
            break
        }
    }

    /// The Prometheus text exposition of everything recorded.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Metrics.Counter {
        Counter(label: label, dimensions: dimensions, factory: factory)
    }

    private func timer(_ label: String) -> Metrics.Timer {
        Metrics.Timer(label: label, dimensions: [], factory: factory)
    }
}
