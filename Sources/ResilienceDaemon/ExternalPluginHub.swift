public import Logging
public import ResilienceCore
import ResilienceOutput
import ServiceLifecycle
internal import Synchronization

/// The runtime's side of every external plugin: one ``ResiliencePlugin`` that forwards each
/// action of a service an external plugin declared over that plugin's control-socket session,
/// and returns when the plugin reports the outcome. The executor treats it as any Swift
/// plugin: ordering, retries with backoff, one attempt in flight per service, timeouts and the
/// suspension hold all apply unchanged.
///
/// Invariants:
/// - ``performs(_:for:)`` answers from what the plugin declared in its hello, whether it is
///   connected or not, so the answer never changes while an action runs; a plugin's
///   declaration is replaced only by its own next hello.
/// - Each forwarded action has an id never used before; an outcome counts only for an id in
///   flight on that plugin's current connection, once.
/// - A plugin that disconnects fails every action in flight on it (retryable: the executor's
///   backoff applies); its services stay registered, and an action decided while it is away
///   waits for its return until the action's timeout, then is sent the moment it connects.
/// - A cancelled action (timeout, superseded, a newer epoch) is withdrawn: a `cancel` message
///   tells the plugin, and a later outcome for it is refused.
/// - At most one connection per plugin name; a service id belongs to one plugin, and never to
///   one the daemon's own plugins carry (`isReserved`).
public final class ExternalPluginHub: ResiliencePlugin, Sendable {
    public let id = "external"
    public let reports: AsyncStream<PluginReport>
    let reportSink: AsyncStream<PluginReport>.Continuation
    let isReserved: @Sendable (ServiceID) -> Bool
    let logger: Logger
    let state = Mutex(State())

    /// One plugin session the hub talks to.
    final class Connection: Sendable {
        let plugin: String
        let number: UInt64
        let send: @Sendable (String) -> Bool

        init(plugin: String, number: UInt64, send: @escaping @Sendable (String) -> Bool) {
            (self.plugin, self.number, self.send) = (plugin, number, send)
        }
    }

    struct Declaration {
        var actions: Set<ActionKind>
        var services: Set<ServiceID>
        var connection: Connection?
    }

    struct Owned {
        var plugin: String
        var service: ClientService
    }

    struct Pending {
        var plugin: String
        /// The perform message, sent once the plugin is connected.
        var line: String
        /// The connection it went out on; nil while it waits for the plugin.
        var sentOn: UInt64?
        var continuation: CheckedContinuation<ExternalOutcome, any Error>
    }

    struct State {
        var plugins: [String: Declaration] = [:]
        /// Every declared service and the plugin that declared it.
        var owners: [ServiceID: Owned] = [:]
        var pending: [UInt64: Pending] = [:]
        var nextID: UInt64 = 0
        var nextConnection: UInt64 = 0
        /// The path before the latest decided one, and the latest.
        var previousPath: NetworkPath?
        var path: NetworkPath?
    }

    /// - Parameter isReserved: whether a service id belongs to the daemon's own plugins.
    public init(logger: Logger, isReserved: @escaping @Sendable (ServiceID) -> Bool = { _ in false }) {
        (reports, reportSink) = AsyncStream.makeStream()
        self.logger = logger
        self.isReserved = isReserved
    }

    public func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        state.withLock { state in
            guard let owner = state.owners[service] else { return false }
            return state.plugins[owner.plugin]?.actions.contains(kind) ?? false
        }
    }

    public func pathChanged(_ path: NetworkPath) {
        state.withLock { state in
            state.previousPath = state.path
            state.path = path
        }
    }

    public func run() async throws {
        try? await gracefulShutdown()
        reportSink.finish()
    }

    /// Forwards `action` to the plugin that declared its service and waits for its outcome.
    /// - Throws: ``PluginError`` for a failure the plugin reports or its disconnection;
    ///   `CancellationError` when the executor withdraws the action.
    public func perform(_ action: PlannedAction, context: PluginContext) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let outcome: ExternalOutcome = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<ExternalOutcome, any Error>) in
                state.withLock { state in
                    guard !Task.isCancelled else {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    guard let owner = state.owners[action.service]?.plugin else {
                        continuation.resume(throwing: PluginError("no external plugin carries \(action.service)"))
                        return
                    }
                    let connection = state.plugins[owner]?.connection
                    if connection == nil, action.trigger == .shutdown {
                        // Nothing waits for a plugin that is gone when the daemon stops.
                        continuation.resume(
                            throwing: PluginError.permanent("external plugin \"\(owner)\" is not connected"))
                        return
                    }
                    let line = ExternalPluginLines.perform(
                        id: id, action: action, context: context, previousPath: state.previousPath)
                    state.pending[id] = Pending(
                        plugin: owner, line: line, sentOn: connection?.number, continuation: continuation)
                    // Only queued (the session's writer does the I/O): sent under the lock, so a
                    // reconnection never sends it twice.
                    _ = connection?.send(line)
                }
            }
        } onCancel: {
            withdraw(id)
        }
        switch outcome {
        case .succeeded: return
        case .skipped:
            context.logger.debug("external plugin skipped the action")
        case .failed(let error): throw error
        }
    }

    /// Takes action `id` back: the plugin hears `cancel` if it had it; the perform throws.
    func withdraw(_ id: UInt64) {
        let taken = state.withLock { state -> (Pending, Connection?)? in
            guard let pending = state.pending.removeValue(forKey: id) else { return nil }
            let connection = state.plugins[pending.plugin]?.connection
            return (pending, connection?.number == pending.sentOn ? connection : nil)
        }
        guard let (pending, connection) = taken else { return }
        _ = connection?.send(ExternalPluginLines.cancel(id: id))
        pending.continuation.resume(throwing: CancellationError())
    }

    /// Whether an external plugin declared a service of `account` (a push for it is accepted).
    public func carriesAccount(_ account: String) -> Bool {
        state.withLock { $0.owners.values.contains { $0.service.account == account } }
    }
}
