/// Every call state of one agent in one value: the calls not yet ended, the CANCELs of calls
/// hung up while ringing out, the BYEs of calls hung up while the path was gone, the outcomes of
/// the exchanges the app and the policy wait for, and the numbers of the flows calls use.
/// ``SIPUserAgent`` holds exactly one; it does the I/O.
///
/// Invariants:
/// - ``subscript(_:)`` lists only calls not yet ended: ``remove(_:)`` takes a call out when it
///   ends, and a call is never put back under the same id.
/// - A pending CANCEL (``PendingCancel``) belongs to a call already ended (hung up while ringing
///   out) whose INVITE transaction still runs; ``cancelDue(_:)`` hands its CANCEL out at most
///   once, and ``inviteFinished(_:)`` forgets it.
/// - At most ``deferredByeLimit`` BYEs wait; one more drops the oldest (returned, to be logged);
///   ``takeDeferredByes()`` hands each out once.
/// - Exchange ids and flow numbers are never reused; each exchange's outcome goes to its waiter
///   exactly once (kept until the waiter comes, at most ``keptLimit`` of them); a flow number
///   names one flow object, and a flow gone is never numbered again.
struct CallTable {
    static let deferredByeLimit = 64
    /// The most outcomes (and final responses) kept for waiters not there yet.
    static let keptLimit = 256

    private var live: [CallID: SIPCall] = [:]
    private var cancelling: [CallID: PendingCancel] = [:]
    private var deferredByes: [(call: SIPCall, dialog: Dialog)] = []
    private var lastExchange: UInt64 = 0
    private var outcomes: [ExchangeID: ExchangeOutcome] = [:]
    private var waiters: [ExchangeID: CheckedContinuation<ExchangeOutcome, Never>] = [:]
    private var responses: [ExchangeID: SIPMessage] = [:]
    private var lastFlow: UInt64 = 0
    private var flowNumbers: [ObjectIdentifier: (flow: WeakFlow, number: FlowNumber)] = [:]

    // MARK: Calls

    /// The call `id` while it is not ended; setting nil is ``remove(_:)``.
    subscript(id: CallID) -> SIPCall? {
        get { live[id] }
        set { live[id] = newValue }
    }

    /// The calls not yet ended.
    var all: [CallID: SIPCall] { live }

    /// The first call (in no particular order) for which `matches` holds.
    func first(where matches: (SIPCall) -> Bool) -> CallID? {
        live.first { matches($0.value) }?.key
    }

    /// Takes the call `id` out (it ended); nil when it was not in.
    mutating func remove(_ id: CallID) -> SIPCall? { live.removeValue(forKey: id) }

    // MARK: CANCELs of calls hung up while ringing out

    /// Call `id` was hung up while its INVITE still runs: its CANCEL waits for a provisional
    /// when `pending.sent` is false (RFC 3261 §9.1).
    mutating func hungUpRinging(_ id: CallID, _ pending: PendingCancel) { cancelling[id] = pending }

    /// Whether call `id` was hung up while ringing out and its INVITE transaction still runs.
    func isCancelling(_ id: CallID) -> Bool { cancelling[id] != nil }

    /// A provisional arrived for call `id`'s INVITE: the CANCEL that waited for it, once.
    mutating func cancelDue(_ id: CallID) -> PendingCancel? {
        guard var pending = cancelling[id], !pending.sent else { return nil }
        pending.sent = true
        cancelling[id] = pending
        return pending
    }

    /// Call `id`'s INVITE transaction ended: nothing more to CANCEL.
    mutating func inviteFinished(_ id: CallID) { cancelling[id] = nil }

    // MARK: BYEs waiting for the path

    /// Keeps the BYE of an ended call for when the path returns; the oldest waiting BYE when
    /// the limit was reached (dropped).
    mutating func deferBye(of call: SIPCall, dialog: Dialog) -> SIPCall? {
        let dropped = deferredByes.count >= Self.deferredByeLimit ? deferredByes.removeFirst().call : nil
        deferredByes.append((call, dialog))
        return dropped
    }

    /// Whether BYEs wait for the path.
    var hasDeferredByes: Bool { !deferredByes.isEmpty }

    /// The waiting BYEs, oldest first; none waits afterwards.
    mutating func takeDeferredByes() -> [(call: SIPCall, dialog: Dialog)] {
        defer { deferredByes = [] }
        return deferredByes
    }

    // MARK: Exchanges the app and the policy wait for

    /// A new exchange id; never one given before.
    mutating func newExchange() -> ExchangeID {
        lastExchange &+= 1
        return ExchangeID(rawValue: lastExchange)
    }

    /// Exchange `id` is over: its waiter goes on (or finds the outcome when it comes).
    mutating func complete(_ id: ExchangeID, _ outcome: ExchangeOutcome) {
        if let waiter = waiters.removeValue(forKey: id) {
            waiter.resume(returning: outcome)
            return
        }
        if outcomes.count >= Self.keptLimit, let oldest = outcomes.keys.min() { outcomes[oldest] = nil }
        outcomes[id] = outcome
    }

    /// The outcome of exchange `id` when it is over already (taken out).
    mutating func takeOutcome(_ id: ExchangeID) -> ExchangeOutcome? { outcomes.removeValue(forKey: id) }

    /// Parks the waiter of exchange `id` (whose outcome is not there yet).
    mutating func wait(for id: ExchangeID, _ waiter: CheckedContinuation<ExchangeOutcome, Never>) {
        waiters[id] = waiter
    }

    /// Notes the last final response of exchange `id` (what its failure quotes).
    mutating func note(_ response: SIPMessage, of id: ExchangeID) {
        if responses[id] == nil, responses.count >= Self.keptLimit, let oldest = responses.keys.min() {
            responses[oldest] = nil
        }
        responses[id] = response
    }

    /// The last final response of exchange `id` (taken out).
    mutating func takeResponse(of id: ExchangeID) -> SIPMessage? { responses.removeValue(forKey: id) }

    /// The last final response of exchange `id`.
    func response(of id: ExchangeID) -> SIPMessage? { responses[id] }

    // MARK: Flow numbers

    /// The number of `flow`: the one it was given, else a new one (forgetting flows gone).
    mutating func number(of flow: SIPTransport) -> FlowNumber {
        let key = ObjectIdentifier(flow)
        if let known = flowNumbers[key], known.flow.flow === flow { return known.number }
        flowNumbers = flowNumbers.filter { $0.value.flow.flow != nil }
        lastFlow &+= 1
        let number = FlowNumber(rawValue: lastFlow)
        flowNumbers[key] = (WeakFlow(flow: flow), number)
        return number
    }
}

/// A flow held weakly: one that went is numbered no more.
struct WeakFlow {
    weak var flow: SIPTransport?
}

/// An outgoing call hung up while ringing out, whose INVITE transaction still runs: the CANCEL
/// waits for a provisional response (RFC 3261 §9.1 forbids it before one), and a 2xx that
/// crosses the CANCEL is ACKed and ended with BYE (§15: the dialog it made must not linger).
///
/// Invariant: `sent` turns true once and the CANCEL goes out exactly then (``CallTable``).
struct PendingCancel {
    let invite: SIPMessage
    /// Weak: the INVITE's transaction (``SIPUserAgent/runInvite(_:call:exchange:attempt:over:)``) holds its flow
    /// as long as the entry lives; a flow gone meanwhile has nothing to CANCEL over.
    weak var flow: SIPTransport?
    var sent: Bool
}
