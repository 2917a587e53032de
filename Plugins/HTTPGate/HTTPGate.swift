public import Logging
public import ResilienceCore
import Synchronization

/// A gate around the app's HTTP client for one HTTP service (a `ClientService` of kind `.http`).
///
/// The app sends every request of the service through ``perform(_:)``; ``HTTPGatePlugin`` closes
/// the gate on `drain-http` and opens it on `open-http`. A gate starts closed ("not opened yet"):
/// the default policy opens it when the app starts, or comes back, in the foreground.
///
/// Invariants:
/// - ``inFlight`` is exact under concurrency and cancellation: it counts the `work` closures that
///   started and have not returned or thrown, however they end.
/// - No request starts after a drain began: the check and the count share one lock with closing.
/// - A refused request never runs `work`; it throws ``HTTPGateClosed``.
/// - A drain's wait returns when ``inFlight`` reaches zero (or the gate reopens, or the wait is
///   cancelled).
/// - `onClosed` runs at most once per close, after the drain that closed the gate got past its
///   wait; `onOpened` runs once per reopening. The gate logs every transition.
public final class HTTPGate: Sendable {
    /// The service this gate guards.
    public let service: ServiceID
    /// Called after a drain (the app closes its connection pool here).
    let onClosed: (@Sendable () async -> Void)?
    /// Called after the gate reopened.
    let onOpened: (@Sendable () async -> Void)?
    private let logger: Logger
    private let state: Mutex<State>

    /// Why and since when the gate is closed.
    struct Closure: Sendable {
        var reason: String
        var closedBy: String?
        var since: ContinuousClock.Instant?
    }

    private struct State {
        /// nil while open.
        var closure: Closure? = Closure(reason: "not opened yet")
        var inFlight = 0
        /// The gate closed and `onClosed` has not run for that close yet.
        var owesOnClosed = false
        var nextWaiter: UInt64 = 0
        var drainWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]

        mutating func takeDrainWaiters() -> [CheckedContinuation<Void, Never>] {
            defer { drainWaiters = [:] }
            return Array(drainWaiters.values)
        }
    }

    /// - Parameters:
    ///   - service: the HTTP service's identifier, as registered with the manager.
    ///   - logger: where the gate logs its transitions.
    ///   - onOpened: runs after the gate reopened (e.g. warm a connection pool).
    ///   - onClosed: runs after a drain (e.g. close the connection pool).
    public init(
        service: ServiceID, logger: Logger = Logger(label: "netres.http"),
        onOpened: (@Sendable () async -> Void)? = nil, onClosed: (@Sendable () async -> Void)? = nil
    ) {
        self.service = service
        var logger = logger
        logger[metadataKey: "http.service"] = "\(service)"
        self.logger = logger
        self.onOpened = onOpened
        self.onClosed = onClosed
        self.state = Mutex(State())
    }

    /// Runs `work` as one request of this service if the gate is open, counting it in flight
    /// until it returns or throws (also when its task is cancelled).
    /// - Throws: ``HTTPGateClosed`` without running `work` while the gate is draining or closed;
    ///   otherwise whatever `work` throws.
    public func perform<T>(_ work: @Sendable () async throws -> T) async throws -> T {
        try enter()
        defer { leave() }
        return try await work()
    }

    /// Requests running now.
    public var inFlight: Int { state.withLock { $0.inFlight } }

    /// Whether new requests run.
    public var isOpen: Bool { state.withLock { $0.closure == nil } }

    private func enter() throws(HTTPGateClosed) {
        try state.withLock { state throws(HTTPGateClosed) in
            if let closure = state.closure {
                throw HTTPGateClosed(
                    service: service, phase: state.inFlight > 0 ? .draining : .closed, reason: closure.reason,
                    closedBy: closure.closedBy, since: closure.since)
            }
            state.inFlight += 1
        }
    }

    private func leave() {
        let (waiters, drained) = state.withLock { state in
            state.inFlight -= 1
            guard state.inFlight == 0 else { return ([CheckedContinuation<Void, Never>](), false) }
            return (state.takeDrainWaiters(), state.closure != nil)
        }
        if drained { logger.info("http gate drained: closed, nothing in flight") }
        for waiter in waiters { waiter.resume() }
    }

    /// Closes the gate to new requests. Returns the requests in flight, or nil if it was closed.
    @discardableResult
    func close(_ closure: Closure) -> Int? {
        let inFlight: Int? = state.withLock { state in
            guard state.closure == nil else { return nil }
            state.closure = closure
            state.owesOnClosed = true
            return state.inFlight
        }
        if let inFlight {
            logger.info(
                inFlight > 0 ? "http gate draining" : "http gate closed",
                metadata: ["reason": "\(closure.reason)", "in-flight": "\(inFlight)"])
        }
        return inFlight
    }

    /// Opens the gate. Returns false if it was open. Ends any drain wait.
    @discardableResult
    func open() -> Bool {
        let waiters: [CheckedContinuation<Void, Never>]? = state.withLock { state in
            guard state.closure != nil else { return nil }
            state.closure = nil
            state.owesOnClosed = false
            return state.takeDrainWaiters()
        }
        guard let waiters else { return false }
        logger.info("http gate open")
        for waiter in waiters { waiter.resume() }
        return true
    }

    /// Whether `onClosed` is owed for the current close; true at most once per close.
    func takeOwedOnClosed() -> Bool {
        state.withLock { state in
            guard state.closure != nil, state.owesOnClosed else { return false }
            state.owesOnClosed = false
            return true
        }
    }

    /// Returns once nothing is in flight, the gate is open, or the task is cancelled.
    func waitUntilDrained() async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state in
                    if state.inFlight == 0 || state.closure == nil || Task.isCancelled { return true }
                    state.drainWaiters[id] = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.drainWaiters.removeValue(forKey: id) }?.resume()
        }
    }
}
