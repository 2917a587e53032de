public import Logging
internal import NIOCore
internal import NIOPosix
public import ResilienceCore
internal import Synchronization

/// One account's SIP user agent: its flow to the registrar, its client transactions, digest
/// credentials, registration and subscriptions.
///
/// Layers, bottom up: `SIPTransport` (bytes ↔ messages) → `TransactionLayer` (client
/// transactions: retransmission and matching on the lent clock; server transactions: requests
/// in order, retransmissions answered from the transaction) → `exchange` (digest challenges) →
/// registration / subscription / publication state. Dialog usages (INVITE) plug in at the same
/// level as subscriptions: they build requests and call `exchange`; inbound requests reach them
/// through `handle(inbound:)`.
public actor SIPUserAgent {
    public nonisolated let account: SIPAccount
    nonisolated let timers: SIPTimers
    let logger: Logger
    let table = TransactionTable()
    let serverTransactions: ServerTransactionTable
    /// Transaction timers and pong timeouts run on the clock the runtime lends (see
    /// ``SIPPlugin``'s `perform`); tests may pass a `ManualClock` at init.
    nonisolated let clock: LentClock
    /// Warnings a peer can provoke, rate-limited per kind for the whole plugin (the budget of the
    /// shared sockets' log, ``SIPPlugin``'s), or for this agent alone without shared sockets.
    nonisolated let throttledLog: ThrottledLog
    /// The ordered stream of inbound requests and the task that serves it, while flows are open.
    var inboundSession: (sink: AsyncStream<InboundRequest>.Continuation, task: Task<Void, Never>)?
    var transport: SIPTransport?
    var registration: RegistrationState
    /// RFC 8599 parameters in the Contact; starts as the account's, changes with the push token.
    var push: PushParameters?
    /// Digest state per challenge origin (nonce, realm, nonce count never shared between them):
    /// `auth` answers the registrar's challenges (REGISTER, SUBSCRIBE, PUBLISH, MESSAGE...),
    /// `callAuth` the call path's (INVITE and the requests of a call's dialog), so a proxy's 407
    /// to an INVITE never replaces what REGISTER uses.
    var auth: AuthState?
    var callAuth: AuthState?
    var subscriptions: [ServiceID: SubscriptionState] = [:]
    /// The dialogs of this agent's subscriptions (and calls next): NOTIFYs are matched here.
    var dialogs = DialogTable<ServiceID>()
    var publication: PublicationState?
    /// Every call state of this agent (see ``CallTable``): the calls not yet ended, each owning
    /// one dialog of `dialogs`, the CANCELs and BYEs still owed for ended ones, the outcomes of
    /// the exchanges callers wait for, and the flow numbers calls use.
    var calls = CallTable()
    /// The last flow the server (or the network) ended, not this agent: a call ringing on it
    /// has no new address to be rung again from.
    var lastFlowLostByServer: ObjectIdentifier?
    /// Every change of every call, in order; keeps the newest 256 when nobody reads.
    public nonisolated let callEvents: AsyncStream<CallEvent>
    nonisolated let callEventSink: AsyncStream<CallEvent>.Continuation
    /// Every MESSAGE received (RFC 3428), in order; keeps the newest 64 when nobody reads.
    public nonisolated let messages: AsyncStream<InboundMessage>
    nonisolated let messageSink: AsyncStream<InboundMessage>.Continuation
    /// The plugin's listener for call changes (service reports); set once, by ``SIPPlugin``.
    nonisolated let callObserver = Mutex<(@Sendable (CallEvent) -> Void)?>(nil)
    /// The flow ping waiting for its pong, tagged so a stale timeout cannot end a newer one, with
    /// its timeout (cancelled when the wait ends, so an answered ping leaves no timer armed).
    var pongWaiter: (id: UInt64, continuation: CheckedContinuation<Bool, Never>, timeout: Task<Void, Never>)?
    var pongGeneration: UInt64 = 0
    var pongCount: UInt64 = 0
    /// A flow being opened, shared by interleaved actions that need the same address. Only the
    /// newest opening may become ``transport`` (see ``flow(for:)``): `generation` tells it apart.
    var opening: (local: String, remote: SocketAddress, generation: UInt64, task: Task<SIPTransport, any Error>)?
    var openingGeneration: UInt64 = 0
    /// Notifications and other unsolicited news; keeps the newest 64 when nobody reads.
    public nonisolated let events: AsyncStream<SIPEvent>
    nonisolated let eventContinuation: AsyncStream<SIPEvent>.Continuation
    /// False while the runtime's path is unsatisfied (``pathChanged(satisfied:)``): answers to the
    /// server's requests, and their retransmissions, are held (not sent) meanwhile. A server
    /// retransmits an unanswered request over UDP; over TCP its transaction times out and the
    /// restore's REGISTER and SUBSCRIBEs bring its state back.
    nonisolated let pathSatisfied = Mutex(true)
    /// Connections of our own to remote targets, for the in-dialog requests of stream accounts
    /// whose route set is empty (see ``dialogTransport(for:over:)``), oldest first.
    var directConnections: [DirectConnection] = []
    /// Told the services of a flow that ended without this agent closing it (see ``flowLost(_:)``).
    nonisolated let onFlowLost: @Sendable ([ServiceID]) -> Void
    /// Paces REGISTERs to this account's registrar together with every other account there.
    nonisolated let pacer: RegistrarPacer
    /// Tells the runtime of responses on the flow (see ``FlowActivity``).
    nonisolated let activity: FlowActivity
    /// A call whose path was lost longer than this is ended on return; zero keeps calls across
    /// any outage. Only a fallback: the plugin's actions bring the policy's
    /// `call-survival-budget` (`PluginContext.callSurvivalBudget`), which wins.
    public nonisolated let callSurvivalBudget: Duration
    /// The shared UDP sockets of the plugin (one per local address and registrar); nil gives
    /// each UDP flow a socket of its own.
    nonisolated let flows: DatagramFlowHub?
    /// Starts the branch of every request this agent sends, on any of its flows, so a shared
    /// socket hands the responses to this agent (see `DatagramRoutes`).
    nonisolated let flowTag = SIPTransport.newFlowTag()
    /// RFC 3263 answers, shared with the plugin's other accounts (see `SIPUserAgent+Failover`).
    nonisolated let directory: RegistrarDirectory
    /// The target in use and when the preferred one is probed again; the target of the last 2xx
    /// to a REGISTER; the flows of probes in progress (their loss is nobody's), and whether one runs.
    var failover = RegistrarFailover()
    var boundTarget: SIPTarget?
    var probeFlows: Set<ObjectIdentifier> = []
    var probing = false
    /// Flows whose opening a newer one replaced (``install(_:generation:)``): a REGISTER that
    /// failed while this grew says nothing of its server, so it moves no account to another.
    var supersededOpenings: UInt64 = 0
    /// RFC 5626 §4.2: the second flow of an `outbound` account with `flows: 2`.
    var secondFlow = SecondFlowState()

    /// - Parameters:
    ///   - account: the account this agent registers and subscribes.
    ///   - timers: RFC 3261 timers.
    ///   - logger: SIP transactions and flows log here; never a password.
    ///   - onFlowLost: called once per flow the server ended (FIN/RST, ICMP port
    ///   unreachable, an unanswered flow ping) with the services whose server-side state rode on
    ///   it; never for flows this agent closed itself (address change, stale transport, `close()`).
    ///   - clock: the clock for transaction timers until the runtime lends one with an action.
    ///   - pacer: shared by the accounts of one registrar (``SIPPlugin`` does that); by default
    ///     the agent paces alone.
    ///   - callSurvivalBudget: see ``callSurvivalBudget`` (policy `call-survival-budget`).
    ///   - onFlowActive: called with the registration's service when a response arrived on the
    ///     flow (at most once a second, see `FlowActivity`): its flow ping can wait.
    public init(
        account: SIPAccount, timers: SIPTimers = SIPTimers(), logger: Logger,
        clock: any RuntimeClock = ContinuousClock(), pacer: RegistrarPacer = RegistrarPacer(settings: .init()),
        callSurvivalBudget: Duration = .seconds(30),
        onFlowLost: @escaping @Sendable ([ServiceID]) -> Void = { _ in },
        onFlowActive: @escaping @Sendable ([ServiceID]) -> Void = { _ in }
    ) {
        self.init(
            account: account, timers: timers, logger: logger, clock: clock, pacer: pacer,
            callSurvivalBudget: callSurvivalBudget, flows: nil, directory: nil, onFlowLost: onFlowLost,
            onFlowActive: onFlowActive)
    }

    /// The public initializer's, plus `flows`: the plugin's shared UDP sockets, and `directory`:
    /// its RFC 3263 answers (nil: one of the agent's own).
    init(
        account: SIPAccount, timers: SIPTimers, logger: Logger, clock: any RuntimeClock, pacer: RegistrarPacer,
        callSurvivalBudget: Duration, flows: DatagramFlowHub?, directory: RegistrarDirectory?,
        onFlowLost: @escaping @Sendable ([ServiceID]) -> Void, onFlowActive: @escaping @Sendable ([ServiceID]) -> Void
    ) {
        self.flows = flows
        self.directory = directory ?? RegistrarDirectory(logger: logger)
        self.account = account
        self.callSurvivalBudget = max(callSurvivalBudget, .zero)
        self.pacer = pacer
        self.activity = FlowActivity(services: [account.registrationService], report: onFlowActive)
        self.timers = timers
        self.onFlowLost = onFlowLost
        var logger = logger
        logger[metadataKey: "sip.account"] = "\(account.name)"
        self.logger = logger
        let lent = LentClock(clock)
        self.clock = lent
        self.throttledLog = flows?.log.sharing(logger: logger, clock: lent) ?? ThrottledLog(logger: logger, clock: lent)
        self.serverTransactions = ServerTransactionTable(timers: timers, clock: lent)
        self.registration = RegistrationState(expires: account.expires)
        self.push = account.push
        (events, eventContinuation) = AsyncStream.makeStream(of: SIPEvent.self, bufferingPolicy: .bufferingNewest(64))
        (callEvents, callEventSink) = AsyncStream.makeStream(of: CallEvent.self, bufferingPolicy: .bufferingNewest(256))
        (messages, messageSink) = AsyncStream.makeStream(of: InboundMessage.self, bufferingPolicy: .bufferingNewest(64))
    }

    deinit { inboundSession?.sink.finish() }

    /// Sets the listener that hears every call event (besides ``callEvents``).
    nonisolated func observeCalls(_ observer: @escaping @Sendable (CallEvent) -> Void) {
        callObserver.withLock { $0 = observer }
    }

    /// The runtime's path became satisfied or unsatisfied: while it is unsatisfied, answers to the
    /// server's requests (and their retransmissions) are not sent.
    public nonisolated func pathChanged(satisfied: Bool) {
        let was = pathSatisfied.withLock { value in
            defer { value = satisfied }
            return value
        }
        if was != satisfied { logger.debug("sip.replies", metadata: ["held": "\(!satisfied)"]) }
    }

    /// The runtime's path changed: as ``pathChanged(satisfied:)``, and when it is satisfied the
    /// BYEs of calls hung up meanwhile go out.
    public nonisolated func pathChanged(_ path: NetworkPath) {
        pathChanged(satisfied: path.isSatisfied)
        guard path.isSatisfied else { return }
        // The call table says whether a BYE waits: only the actor may read it.
        Task { await self.sendDeferredByes(path: path) }
    }

    /// Lends the runtime's clock to this agent's timers (each action's `PluginContext.clock`).
    public nonisolated func lend(clock: any RuntimeClock) { self.clock.lend(clock) }

    /// The local address the transport is (or will be) bound to, or nil when none is up.
    public var boundAddress: String? { transport?.isActive == true ? transport?.localHost : nil }

    /// Closes the flow and ends the inbound stream (shutdown); a later action opens both again.
    public func close() async {
        inboundSession?.sink.finish()
        inboundSession = nil
        opening = nil
        closeDirectConnections()
        await dropSecondFlow(reason: "closed")
        flows?.bindingWatch.leave(ObjectIdentifier(self))
        if let current = transport {
            transport = nil
            table.flowClosed(ObjectIdentifier(current))
            await current.close()
        }
    }

    /// Runs `transaction` once the registrar's pacer admits it when `isRegister` (at once
    /// otherwise). A response to the first copy says the registrar keeps up, however long it took
    /// (a busy machine delays answers without losing requests); one that needed a retransmission,
    /// or none at all, says it is behind, so the window narrows.
    private func paced(
        _ isRegister: Bool, _ transaction: () async throws -> (response: SIPMessage, copies: Int)
    ) async throws -> SIPMessage {
        guard isRegister else { return try await transaction().response }
        try await pacer.admit(clock: clock)
        do {
            let (response, copies) = try await transaction()
            pacer.finish(copies <= 1 ? .answered : .retransmitted)
            return response
        } catch {
            pacer.finish(Task.isCancelled ? .abandoned : .retransmitted)
            throw error
        }
    }

    /// Sends a request and answers digest challenges (at most once per fresh challenge, once
    /// more for `stale=true`). Every attempt gets a new branch and the next CSeq.
    /// `sending` hears each attempt's request (its Via, CSeq and credentials set) as it goes.
    /// `ofSecondFlow`: the digest state is the second flow's own (its server has other nonces).
    /// - Throws: ``PluginError``: permanent for rejected credentials, retryable for timeouts.
    func exchange(
        _ template: SIPMessage, uri: String, over flow: SIPTransport, ofSecondFlow: Bool = false,
        nextCSeq: () -> UInt32, sending: (SIPMessage) -> Void = { _ in }
    ) async throws -> SIPMessage {
        let method = template.method ?? "?"
        // A call's in-dialog request with an empty route set goes to its remote target.
        let flow = await dialogTransport(for: template, over: flow)
        var freshChallengeSent = false
        var staleRetried = false
        // A scheduled refresh's answers may be read in a batch with its peers' (ReadCoalescing).
        let socket = flow.sharedSocket
        let patient = AnswerPatience.mayWait
        socket?.beginAwaitingAnswers(patient: patient)
        defer { socket?.endAwaitingAnswers(patient: patient) }
        for _ in 0..<4 {
            // A cancelled action (superseded, or its epoch lost the path) sends nothing more.
            try Task.checkCancellation()
            var request = SIPMessage(startLine: template.startLine)
            request.headers.add(
                "Via", flow.newVia())
            request.headers.add("Max-Forwards", "70")
            for field in template.headers { request.headers.add(field.name, field.value) }
            request.headers.set("CSeq", "\(nextCSeq()) \(method)")
            request.body = template.body
            if let credentials = authorizationHeader(method: method, uri: uri, ofSecondFlow: ofSecondFlow) {
                request.headers.add(credentials.name, credentials.value)
            }
            sending(request)
            let response: SIPMessage
            do {
                response = try await paced(method == "REGISTER") {
                    try await runCountedNonInviteTransaction(
                        request, over: flow, table: table, timers: timers, clock: clock)
                }
            } catch  where Task.isCancelled {
                // The executor cancelled the action (new epoch, deadline): say so, not "timeout".
                throw CancellationError()
            } catch TransactionFailure.timeout {
                throw PluginError("no response to \(method) within \(timers.transactionTimeout)")
            } catch TransactionFailure.flowClosed {
                throw PluginError("\(account.transport.rawValue) flow closed during \(method)")
            }
            guard let status = response.status, status == 401 || status == 407 else { return response }
            let headerName = status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"
            guard let challenge = DigestChallenge.best(of: response.headers.values(headerName)) else {
                setDigest(nil, for: method, ofSecondFlow: ofSecondFlow)
                throw PluginError.permanent("\(method) rejected with \(status) and no usable Digest challenge")
            }
            if challenge.stale {
                guard !staleRetried else { throw PluginError.permanent("\(method): repeated stale nonce") }
                staleRetried = true
            } else if freshChallengeSent {
                setDigest(nil, for: method, ofSecondFlow: ofSecondFlow)
                logger.error("sip.auth-failed", metadata: ["method": "\(method)", "status": "\(status)"])
                throw PluginError.permanent("authentication failed for \(account.addressOfRecord) (\(status))")
            }
            setDigest(AuthState(challenge: challenge, isProxy: status == 407), for: method, ofSecondFlow: ofSecondFlow)
            freshChallengeSent = true
        }
        throw PluginError.permanent("\(method): too many authentication rounds")
    }

    /// The requests whose challenges come from the call path (see ``callAuth``).
    static let callMethods: Set<String> = ["INVITE", "ACK", "BYE", "CANCEL", "UPDATE", "PRACK", "INFO", "REFER"]

    /// Sets the digest state of `method`'s challenge origin (the second flow's own when asked).
    func setDigest(_ state: AuthState?, for method: String, ofSecondFlow: Bool = false) {
        if ofSecondFlow {
            secondFlow.auth = state
        } else if Self.callMethods.contains(method.uppercased()) {
            callAuth = state
        } else {
            auth = state
        }
    }

    func authorizationHeader(method: String, uri: String, ofSecondFlow: Bool = false) -> (
        name: String, value: String
    )? {
        let isCall = Self.callMethods.contains(method.uppercased())
        guard var state = ofSecondFlow ? secondFlow.auth : isCall ? callAuth : auth else { return nil }
        state.nonceCount += 1
        setDigest(state, for: method, ofSecondFlow: ofSecondFlow)
        let credentials = DigestCredentials(username: account.authUser ?? account.user, password: account.password)
        let value = credentials.authorization(
            for: state.challenge, method: method, uri: uri, nonceCount: state.nonceCount, cnonce: randomToken())
        return (state.isProxy ? "Proxy-Authorization" : "Authorization", value)
    }
}

/// The last digest challenge, reused for the following requests (nonce count increments).
struct AuthState {
    var challenge: DigestChallenge
    var isProxy: Bool
    var nonceCount: UInt32 = 0
}

/// 16 random hex digits for tags, Call-IDs, branches and cnonces.
func randomToken() -> String {
    let value = UInt64.random(in: .min ... .max)
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
