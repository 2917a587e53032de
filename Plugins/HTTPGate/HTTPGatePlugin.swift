import Logging
public import ResilienceCore

/// Performs `drain-http` and `open-http` on a set of ``HTTPGate``s, one per HTTP service.
///
/// - `drain-http` closes the gate to new requests, waits for the ones in flight, then runs the
///   gate's `onClosed`. The wait ends at the latest nine tenths of the way from the attempt's
///   start to `context.deadline`, leaving the rest for `onClosed`; requests still running then
///   are reported as a permanent `PluginError` naming their count (after `onClosed` ran):
///   retrying cannot make them finish sooner.
/// - `open-http` reopens the gate and runs its `onOpened`.
///
/// Invariants: the plugin carries no clock and never reads one; it only sleeps until a deadline
/// derived from the `PluginContext`, on the clock the context lends (the runtime's). Cancelled
/// (a newer epoch, shutdown timeout), a drain leaves the gate closed and `onClosed` owed to the
/// next drain.
public final class HTTPGatePlugin: ResiliencePlugin {
    public let id = "http"
    /// The actions a gate carries out.
    public static let actions: Set<ActionKind> = [.drainHTTP, .openHTTP]
    private let gates: [ServiceID: HTTPGate]

    /// - Parameter gates: one per HTTP service; services must be unique.
    public init(gates: [HTTPGate]) {
        self.gates = Dictionary(uniqueKeysWithValues: gates.map { ($0.service, $0) })
    }

    /// The HTTP services, for the manager's service table.
    public var services: [ClientService] {
        gates.keys.sorted().map { ClientService(id: $0, kind: .http) }
    }

    /// Draining and opening, for the services it has a gate for.
    public func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        Self.actions.contains(kind) && gates[service] != nil
    }

    /// The gate of a service.
    public func gate(for service: ServiceID) -> HTTPGate? { gates[service] }

    public func perform(_ action: PlannedAction, context: PluginContext) async throws {
        guard let gate = gates[action.service] else {
            throw PluginError.permanent("http: unknown service \(action.service)")
        }
        switch action.kind {
        case .drainHTTP: try await drain(gate, trigger: action.trigger, context: context)
        case .openHTTP:
            guard gate.open() else { return }
            await gate.onOpened?()
        default: throw PluginError.permanent("http: \(action.kind) does not apply to \(action.service)")
        }
    }

    private func drain(_ gate: HTTPGate, trigger: Trigger, context: PluginContext) async throws {
        gate.close(
            HTTPGate.Closure(reason: Self.reason(closedBy: trigger), closedBy: trigger.name, since: context.now))
        let waitUntil = context.deadline - (context.deadline - context.now) / 10
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await gate.waitUntilDrained() }
            group.addTask { [clock = context.clock] in try? await clock.sleep(until: waitUntil, tolerance: nil) }
            await group.next()
            group.cancelAll()
        }
        try Task.checkCancellation()
        guard !gate.isOpen else {
            context.logger.info("http gate reopened before the drain finished")
            return
        }
        let stillRunning = gate.inFlight
        if gate.takeOwedOnClosed(), let onClosed = gate.onClosed {
            await onClosed()
            context.logger.info("http gate onClosed done", metadata: ["in-flight": "\(stillRunning)"])
        }
        if stillRunning > 0 {
            throw PluginError.permanent(
                "http \(gate.service): \(stillRunning) request(s) still running at the drain deadline; closed anyway")
        }
    }

    /// What a refused request is told about why the gate closed.
    static func reason(closedBy trigger: Trigger) -> String {
        switch trigger {
        case .app(.enteredBackground): "closed while the app is in background"
        case .shutdown: "closed for shutdown"
        default: "closed by \(trigger.name)"
        }
    }
}
