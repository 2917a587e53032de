/// Every call state of one agent in one value: the calls not yet ended, the CANCELs of calls
/// hung up while ringing out, the BYEs of calls hung up while the path was gone, and the tasks
/// parked until a call changes. ``SIPUserAgent`` holds exactly one; it does the I/O.
///
/// Invariants:
/// - ``subscript(_:)`` lists only calls not yet ended: ``remove(_:)`` takes a call out when it
///   ends, and a call is never put back under the same id.
/// - A pending CANCEL (``PendingCancel``) belongs to a call already ended (hung up while ringing
///   out) whose INVITE transaction still runs; ``cancelDue(_:)`` hands its CANCEL out at most
///   once, and ``inviteFinished(_:)`` forgets it.
/// - At most ``deferredByeLimit`` BYEs wait; one more drops the oldest (returned, to be logged);
///   ``takeDeferredByes()`` hands each out once.
/// - Waiter tokens are never reused (64-bit wrap aside); each waiter is handed back (to be
///   resumed) at most once: by ``removeWaiter(_:)`` or ``callChanged(_:)``.
struct CallTable {
    /// A task parked until its call changes: it resumes with the function it left.
    typealias Waiter = (call: CallID, resume: @Sendable () -> Void)

    static let deferredByeLimit = 64

    private var live: [CallID: SIPCall] = [:]
    private var cancelling: [CallID: PendingCancel] = [:]
    private var deferredByes: [(call: SIPCall, dialog: Dialog)] = []
    private var waiters: [UInt64: Waiter] = [:]
    private var lastWaiterToken: UInt64 = 0

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

    // MARK: Tasks waiting for a call to change

    /// A token for the next waiter; never one given before.
    mutating func newWaiterToken() -> UInt64 {
        lastWaiterToken &+= 1
        return lastWaiterToken
    }

    /// Parks a waiter of call `call` under `token` (from ``newWaiterToken()``).
    mutating func park(_ token: UInt64, call: CallID, resume: @escaping @Sendable () -> Void) {
        waiters[token] = (call, resume)
    }

    /// The waiter under `token`, taken out; nil when it was resumed already.
    mutating func removeWaiter(_ token: UInt64) -> Waiter? { waiters.removeValue(forKey: token) }

    /// Call `id` changed: its waiters, taken out, to be resumed.
    mutating func callChanged(_ id: CallID) -> [Waiter] {
        let tokens = waiters.filter { $0.value.call == id }.keys
        return tokens.compactMap { waiters.removeValue(forKey: $0) }
    }
}
