public import ResilienceCore
import Synchronization

/// A plugin for tests: records every action it is handed and behaves as programmed.
///
/// By default every action succeeds at once. ``program(_:for:)`` queues behaviours per service,
/// consumed one per attempt (the last one sticks), so a test can script "fail twice with
/// Retry-After 5 s, then succeed" or "hang until cancelled". Invariants:
/// - ``starts`` lists attempts in the order `perform` was entered; ``completions`` lists how each
///   attempt ended from the plugin's side (it may have "succeeded" after the executor cancelled it:
///   the executor's events are what a test asserts on for outcomes).
/// - It never reads a clock: delays are expressed as gates the test opens with ``release(_:)``.
/// - ``reportFlowLoss(_:)`` and ``report(_:)`` report through ``reports`` as a plugin whose
///   server dropped a flow (or granted a new expiry) would; reports are buffered until the
///   manager reads them.
public final class RecordingPlugin: ResiliencePlugin {
    /// How one attempt behaves.
    public enum Behavior: Sendable, Hashable {
        case succeed
        case fail(PluginError)
        /// Waits until cancelled (then throws `CancellationError`) or released: a slow action.
        case hang
        /// Waits until ``release(_:)`` ignoring cancellation, then succeeds (a misbehaving plugin).
        case hangIgnoringCancellation
        /// Waits until ``release(_:)`` (then succeeds) or cancellation (then throws).
        case gate
    }

    /// One `perform` call.
    public struct Attempt: Sendable, Hashable {
        public var action: PlannedAction
        public var epoch: NetworkEpoch
        public var attempt: Int
        public var deadline: ContinuousClock.Instant
        /// The context's `lastPathLoss`.
        public var lastPathLoss: Range<ContinuousClock.Instant>? = nil
        /// The context's `callSurvivalBudget`.
        public var callSurvivalBudget: Duration? = nil
    }

    /// How one attempt ended, seen from the plugin.
    public enum Completion: Sendable, Hashable {
        case succeeded(PlannedAction)
        case failed(PlannedAction)
        case cancelled(PlannedAction)
    }

    private struct Gate {
        var service: ServiceID
        var continuation: CheckedContinuation<Void, any Error>?
        var released = false
    }
    private struct State {
        var programs: [ServiceID: [Behavior]] = [:]
        var starts: [Attempt] = []
        var completions: [Completion] = []
        var gates: [UInt64: Gate] = [:]
        var nextGate: UInt64 = 0
        var startWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state = Mutex(State())
    private let services: Set<ServiceID>?

    private let reportStream = AsyncStream<PluginReport>.makeStream()

    public let id: String
    /// The kinds it performs.
    public let actions: Set<ActionKind>
    public var reports: AsyncStream<PluginReport> { reportStream.stream }

    /// Actions it declares local (run while the network is down), beyond the built-in ones.
    public let localActions: Set<ActionKind>

    /// - Parameters:
    ///   - id: its identifier in logs.
    ///   - actions: the kinds it performs; every built-in one by default.
    ///   - services: the services it performs them for; nil for all.
    ///   - localActions: its own actions that need no network (see `ResiliencePlugin.localActions`).
    public init(
        id: String = "recording", actions: Set<ActionKind> = Set(ActionKind.builtIn), services: Set<ServiceID>? = nil,
        localActions: Set<ActionKind> = []
    ) {
        self.id = id
        self.actions = actions
        self.localActions = localActions
        self.services = services
    }

    public func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        actions.contains(kind) && (services?.contains(service) ?? true)
    }

    /// Queues behaviours for the next attempts on `service`; the last one repeats.
    public func program(_ behaviors: [Behavior], for service: ServiceID) {
        state.withLock { $0.programs[service] = behaviors }
    }

    /// Reports that the flow under `services` failed between actions (a `flow.lost` trigger,
    /// throttled by the manager).
    public func reportFlowLoss(_ services: [ServiceID]) { report(.flowLost(services)) }

    /// Reports to the manager as a plugin would between actions (a new expiry, a new service).
    public func report(_ report: PluginReport) { reportStream.continuation.yield(report) }

    /// Every attempt so far, in start order.
    public var starts: [Attempt] { state.withLock { $0.starts } }
    /// How attempts ended, in completion order.
    public var completions: [Completion] { state.withLock { $0.completions } }

    /// Opens the gates of every attempt on `service` waiting in `.gate` or `.hangIgnoringCancellation`.
    public func release(_ service: ServiceID) {
        let waiting = state.withLock { state in
            var waiting: [CheckedContinuation<Void, any Error>] = []
            for (id, gate) in state.gates where gate.service == service {
                if let continuation = gate.continuation {
                    waiting.append(continuation)
                    state.gates.removeValue(forKey: id)
                } else {
                    state.gates[id]?.released = true
                }
            }
            return waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once at least `count` attempts have started.
    public func waitForStarts(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                guard state.starts.count < count else { return true }
                state.startWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func perform(_ action: PlannedAction, context: PluginContext) async throws {
        // The start is recorded and the gate (if any) registered in one step, so a test that saw
        // the start can release the gate without racing it.
        let (behavior, gate, ready) = state.withLock { state in
            var program = state.programs[action.service] ?? []
            let behavior = program.first ?? .succeed
            if program.count > 1 { program.removeFirst() }
            state.programs[action.service] = program
            state.starts.append(
                Attempt(
                    action: action, epoch: context.epoch, attempt: context.attempt, deadline: context.deadline,
                    lastPathLoss: context.lastPathLoss, callSurvivalBudget: context.callSurvivalBudget))
            var gate: UInt64?
            if behavior == .hang || behavior == .gate || behavior == .hangIgnoringCancellation {
                state.nextGate += 1
                gate = state.nextGate
                state.gates[state.nextGate] = Gate(service: action.service)
            }
            let count = state.starts.count
            let ready = state.startWaiters.filter { $0.count <= count }.map(\.continuation)
            state.startWaiters.removeAll { $0.count <= count }
            return (behavior, gate, ready)
        }
        for continuation in ready { continuation.resume() }
        do {
            switch behavior {
            case .succeed: try Task.checkCancellation()
            case .fail(let error): throw error
            case .hang, .gate, .hangIgnoringCancellation:
                try await wait(at: gate!, cancellable: behavior != .hangIgnoringCancellation)
            }
            state.withLock { $0.completions.append(.succeeded(action)) }
        } catch is CancellationError {
            state.withLock { $0.completions.append(.cancelled(action)) }
            throw CancellationError()
        } catch {
            state.withLock { $0.completions.append(.failed(action)) }
            throw error
        }
    }

    private func wait(at id: UInt64, cancellable: Bool) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if cancellable && Task.isCancelled {
                        state.gates.removeValue(forKey: id)
                        return .failure(CancellationError())
                    }
                    guard state.gates[id]?.released == false else {
                        state.gates.removeValue(forKey: id)
                        return .success(())
                    }
                    state.gates[id]?.continuation = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            guard cancellable else { return }
            state.withLock { $0.gates.removeValue(forKey: id) }?.continuation?.resume(throwing: CancellationError())
        }
    }
}
