internal import ResilienceCore
internal import Synchronization

/// RFC 3261 timer values. Defaults are the RFC's; tests may scale them down.
public struct SIPTimers: Hashable, Sendable {
    /// RTT estimate; first retransmission interval over UDP.
    public var t1: Duration
    /// Cap of the retransmission interval for non-INVITE requests.
    public var t2: Duration
    /// How long a message may stay in the network (timer K: retransmitted responses absorbed).
    public var t4: Duration
    /// How long a CRLF flow ping may wait for its pong before the flow is recovered (RFC 5626 §4.4.1).
    public var pongTimeout: Duration

    public init(
        t1: Duration = .milliseconds(500), t2: Duration = .seconds(4), t4: Duration = .seconds(5),
        pongTimeout: Duration = .seconds(10)
    ) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
        self.pongTimeout = pongTimeout
    }

    /// Timer F: a non-INVITE client transaction gives up after 64×T1 (also timer J's length).
    public var transactionTimeout: Duration { t1 * 64 }
}

/// Pending client transactions, matched by top Via branch and CSeq method (RFC 3261 §17.1.3).
///
/// Invariants: a response reaches at most one open transaction; after its final response a
/// transaction's key is remembered until timer K's deadline so that retransmitted responses
/// are absorbed quietly, not reported as strays; at most ``absorbLimit`` keys are remembered.
final class TransactionTable: Sendable {
    struct Key: Hashable {
        var branch: String
        var method: String
    }

    /// What became of a response handed to ``deliver(_:at:)``.
    enum Delivery: Hashable, Sendable {
        case delivered
        /// A retransmission for a transaction in its timer K wait.
        case absorbed
        /// No transaction matches: stray or very late.
        case unknown
    }

    /// What an open transaction is told.
    enum Event: Sendable {
        case response(SIPMessage)
        case flowClosed
        case timer(NonInviteClientTransaction.Timer)
        case inviteTimer(InviteClientTransaction.Timer)
    }

    static let absorbLimit = 1_024

    private struct Entry {
        var sink: AsyncStream<Event>.Continuation
        var flow: ObjectIdentifier
        /// The final non-2xx response that reached this transaction (noted as it arrives).
        var refusal: SIPMessage?
    }
    private struct State {
        var open: [Key: Entry] = [:]
        var absorbing: [Key: ContinuousClock.Instant] = [:]
    }

    private let state = Mutex(State())

    /// Registers a transaction; its responses and a flow closure arrive on `sink`.
    func open(_ key: Key, flow: ObjectIdentifier, sink: AsyncStream<Event>.Continuation) {
        state.withLock { $0.open[key] = Entry(sink: sink, flow: flow) }
    }

    /// Ends a transaction; retransmitted responses are absorbed until `absorbUntil` (timer K).
    func close(_ key: Key, absorbUntil: ContinuousClock.Instant) {
        state.withLock { state in
            state.open.removeValue(forKey: key)
            if state.absorbing.count >= Self.absorbLimit, let oldest = state.absorbing.min(by: { $0.value < $1.value })
            {
                state.absorbing.removeValue(forKey: oldest.key)
            }
            state.absorbing[key] = absorbUntil
        }
    }

    /// Hands a response to its transaction.
    @discardableResult
    func deliver(_ response: SIPMessage, at now: ContinuousClock.Instant) -> Delivery {
        guard let branch = response.topViaBranch, let method = response.cseq?.method else { return .unknown }
        let key = Key(branch: branch, method: method)
        let found: (Entry?, Bool) = state.withLock { state in
            // An expired entry only waits for `close` to evict it (earliest deadline first), so a
            // lookup suffices here: no scan of the table on every response.
            if (300...699).contains(response.status ?? 0) { state.open[key]?.refusal = response }
            return (state.open[key], state.absorbing[key].map { $0 > now } ?? false)
        }
        if let entry = found.0 {
            entry.sink.yield(.response(response))
            return .delivered
        }
        return found.1 ? .absorbed : .unknown
    }

    /// The final non-2xx the open transaction of our request `request` (by its top Via branch
    /// and method) received: noted when the response is delivered, before the transaction's
    /// owner runs again, so the call can take it in before a request the far end sent right
    /// after it (RFC 3261 §14.2, RFC 3311 §5.2: our offer is no longer pending then).
    func refusal(for request: SIPMessage) -> SIPMessage? {
        guard let branch = request.topViaBranch, let method = request.cseq?.method else { return nil }
        return state.withLock { $0.open[Key(branch: branch, method: method)]?.refusal }
    }

    /// Ends every transaction on a flow that closed, so they fail at once instead of timing out.
    func flowClosed(_ flow: ObjectIdentifier) {
        let closed = state.withLock { state in
            let keys = state.open.filter { $0.value.flow == flow }.map(\.key)
            return keys.compactMap { state.open.removeValue(forKey: $0) }
        }
        for entry in closed { entry.sink.yield(.flowClosed) }
    }
}

/// Runs one non-INVITE client transaction (``NonInviteClientTransaction``) over `transport`,
/// with its timers on `clock`, and returns the first final response.
/// - Throws: ``TransactionFailure`` after timer F or when the flow closes; `CancellationError`
///   when the calling task is cancelled.
func runNonInviteTransaction(
    _ request: SIPMessage, over transport: SIPTransport, table: TransactionTable, timers: SIPTimers,
    clock: any RuntimeClock
) async throws -> SIPMessage {
    try await runCountedNonInviteTransaction(request, over: transport, table: table, timers: timers, clock: clock)
        .response
}

/// ``runNonInviteTransaction(_:over:table:timers:clock:)``, also returning how many copies of the
/// request went out before the final response came: 1 when no retransmission was needed (the
/// pacer's measure of a registrar that keeps up, however slow its answer).
func runCountedNonInviteTransaction(
    _ request: SIPMessage, over transport: SIPTransport, table: TransactionTable, timers: SIPTimers,
    clock: any RuntimeClock
) async throws -> (response: SIPMessage, copies: Int) {
    guard let branch = request.topViaBranch, let method = request.cseq?.method else {
        preconditionFailure("request without Via branch or CSeq")
    }
    let key = TransactionTable.Key(branch: branch, method: method)
    let (events, sink) = AsyncStream.makeStream(of: TransactionTable.Event.self)
    table.open(key, flow: transport.transactionFlow, sink: sink)
    let reliable = transport.kind != .udp
    defer { table.close(key, absorbUntil: clock.now + (reliable ? .zero : timers.t4)) }
    var machine = NonInviteClientTransaction(reliable: reliable, timers: timers)
    let bytes = request.serialized()
    var sent = 0
    let outcome: Result<SIPMessage, TransactionFailure>? = await withTaskGroup(of: Void.self) { group in
        defer { group.cancelAll() }
        var actions = machine.start(at: clock.now)
        var iterator = events.makeAsyncIterator()
        while true {
            for action in actions {
                switch action {
                case .send:
                    sent += 1
                    guard await transport.sendCopy(bytes, number: sent) else { return .failure(.flowClosed) }
                case .arm(let timer, let deadline): group.arm(.timer(timer), at: deadline, on: clock, to: sink)
                case .complete(let response): return .success(response)
                case .fail(let failure): return .failure(failure)
                }
            }
            // nil: the calling task was cancelled.
            guard let event = await iterator.next() else { return nil }
            switch event {
            case .response(let response): actions = machine.received(response)
            case .flowClosed: actions = machine.flowClosed()
            case .timer(let timer): actions = machine.timerFired(timer, at: clock.now)
            case .inviteTimer: actions = []
            }
        }
    }
    guard let outcome else { throw CancellationError() }
    return (try outcome.get(), sent)
}

extension SIPTransport {
    /// Sends copy `number` of a request; false only when the first copy was refused (the socket
    /// closed, or ECONNREFUSED closed it): a retransmission that fails is as good as one lost.
    func sendCopy(_ bytes: [UInt8], number: Int) async -> Bool {
        do {
            try await send(bytes: bytes)
            return true
        } catch {
            return number > 1
        }
    }
}

extension TaskGroup<Void> {
    /// A transaction timer: a child that yields `event` to `sink` at `deadline` on `clock`, or
    /// nothing when the group is cancelled first.
    mutating func arm(
        _ event: TransactionTable.Event, at deadline: ContinuousClock.Instant, on clock: any RuntimeClock,
        to sink: AsyncStream<TransactionTable.Event>.Continuation
    ) {
        addTask {
            guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
            sink.yield(event)
        }
    }
}
