internal import Synchronization

/// RFC 3261 timer values. Defaults are the RFC's; tests may scale them down.
public struct SIPTimers: Hashable, Sendable {
    /// RTT estimate; first retransmission interval over UDP.
    public var t1: Duration
    /// Cap of the retransmission interval for non-INVITE requests.
    public var t2: Duration
    /// How long a CRLF flow ping may wait for its pong before the flow is recovered (RFC 5626 §4.4.1).
    public var pongTimeout: Duration

    public init(t1: Duration = .milliseconds(500), t2: Duration = .seconds(4), pongTimeout: Duration = .seconds(10)) {
        self.t1 = t1
        self.t2 = t2
        self.pongTimeout = pongTimeout
    }

    /// Timer F: a non-INVITE client transaction gives up after 64×T1.
    public var transactionTimeout: Duration { t1 * 64 }
}

/// Pending client transactions, matched by top Via branch and CSeq method (RFC 3261 §17.1.3).
final class TransactionTable: Sendable {
    struct Key: Hashable {
        var branch: String
        var method: String
    }

    private struct Entry {
        var continuation: AsyncStream<SIPMessage>.Continuation
        var flow: ObjectIdentifier
    }

    private let entries = Mutex<[Key: Entry]>([:])

    func open(_ key: Key, flow: ObjectIdentifier) -> AsyncStream<SIPMessage> {
        let (stream, continuation) = AsyncStream.makeStream(of: SIPMessage.self)
        entries.withLock { $0[key] = Entry(continuation: continuation, flow: flow) }
        return stream
    }

    func close(_ key: Key) {
        entries.withLock { $0.removeValue(forKey: key) }?.continuation.finish()
    }

    /// Hands a response to its transaction; false when none matches (stray or late response).
    @discardableResult
    func deliver(_ response: SIPMessage) -> Bool {
        guard let branch = response.topViaBranch, let method = response.cseq?.method else { return false }
        guard let entry = entries.withLock({ $0[Key(branch: branch, method: method)] }) else { return false }
        entry.continuation.yield(response)
        return true
    }

    /// Ends every transaction on a flow that closed, so they fail at once instead of timing out.
    func flowClosed(_ flow: ObjectIdentifier) {
        let closed = entries.withLock { table in
            let keys = table.filter { $0.value.flow == flow }.map(\.key)
            return keys.compactMap { table.removeValue(forKey: $0) }
        }
        for entry in closed { entry.continuation.finish() }
    }
}

/// Why a transaction produced no final response.
enum TransactionFailure: Error {
    case timeout
    case flowClosed
}

/// Runs one non-INVITE client transaction (RFC 3261 §17.1.2): sends, retransmits over UDP at
/// T1, 2·T1, ... capped at T2 (at T2 once a provisional response arrived), and returns the
/// first final response, or throws after 64×T1.
func runNonInviteTransaction(
    _ request: SIPMessage, over transport: SIPTransport, table: TransactionTable, timers: SIPTimers
) async throws -> SIPMessage {
    guard let branch = request.topViaBranch, let method = request.cseq?.method else {
        preconditionFailure("request without Via branch or CSeq")
    }
    let key = TransactionTable.Key(branch: branch, method: method)
    let responses = table.open(key, flow: ObjectIdentifier(transport))
    defer { table.close(key) }
    let bytes = request.serialized()
    do {
        try await transport.send(bytes: bytes)
    } catch {
        // The socket refused the request (closed, or ECONNREFUSED which closes it): the flow is over.
        throw TransactionFailure.flowClosed
    }
    let proceeding = ProceedingFlag()
    return try await withThrowingTaskGroup(of: SIPMessage.self) { group in
        group.addTask {
            for await response in responses {
                if let status = response.status, status >= 200 { return response }
                proceeding.set()
            }
            throw TransactionFailure.flowClosed
        }
        group.addTask {
            var interval = timers.t1
            var elapsed = Duration.zero
            while elapsed < timers.transactionTimeout {
                let step = min(interval, timers.transactionTimeout - elapsed)
                try await Task.sleep(for: step)
                elapsed += step
                guard transport.kind == .udp, elapsed < timers.transactionTimeout else { continue }
                try? await transport.send(bytes: bytes)
                interval = proceeding.isSet ? timers.t2 : min(interval * 2, timers.t2)
            }
            throw TransactionFailure.timeout
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TransactionFailure.timeout }
        return first
    }
}

/// Set once a provisional response arrived (the transaction is Proceeding).
private final class ProceedingFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
