public import Logging
public import Metrics
public import ResilienceCore
internal import ServiceLifecycle
internal import Synchronization

/// The SIP plugin: one ``SIPUserAgent`` per account, driven by planned actions.
///
/// Services: `<account>.registration` for each account, plus one per configured subscription
/// (see ``SubscriptionTarget/service(of:)``). The local address comes from the action's
/// `PluginContext/path`; the plugin never reads netlink.
public final class SIPPlugin: ResiliencePlugin {
    public let id = "sip"
    public let accounts: [SIPAccount]
    private let agents: [String: SIPUserAgent]
    private let accountsByName: [String: SIPAccount]
    /// Grows and shrinks at run time (``addSubscription(_:account:)``, ``removeService(_:)``).
    private let routes: Mutex<SIPRouteTable>
    private let logger: Logger
    private let presenceBox = Mutex(PresenceDocument(isOpen: true))
    private let callMetrics: CallMetrics
    /// RFC 3263 answers shared by the accounts; dropped when the network changes.
    private let directory: RegistrarDirectory
    /// What the agents learned, for the manager (see `PluginReport`):
    /// - `.serviceChanged` after every action that changed a service: a registration's granted
    ///   expiry and keep-alive interval (the registrar's Flow-Timer, else the account's), a
    ///   subscription's granted expiry, and both cleared by unregister/unsubscribe; instants are
    ///   the action's `PluginContext.now` plus the granted seconds (clamped by the agent);
    /// - `.flowActive` when a response arrived on an account's flow (at most once a second per
    ///   account), so its flow ping waits a whole interval again;
    /// - `.flowLost` for each flow the server ended, and for a subscription the notifier ended
    ///   (RFC 6665 §4.1.3), so the runtime re-subscribes (or records the permanent failure). A
    ///   subscription is named once per loss: until its next SUBSCRIBE has made it again, later
    ///   lost flows (each failed REGISTER's while a registrar is down) name the registration only.
    ///
    /// Unbounded on purpose: a dropped `.serviceChanged` would leave a stale expiry. Reports come
    /// from actions (one each) and from state transitions of the configured services (a
    /// subscription ends once per dialog), and activity reports come at most once a second per
    /// account and only for answers to its own requests, so a peer cannot make them pile up.
    public let reports: AsyncStream<PluginReport>
    private let reportContinuation: AsyncStream<PluginReport>.Continuation

    /// The presence the next `publish-presence` action publishes.
    public var presence: PresenceDocument {
        get { presenceBox.withLock { $0 } }
        set { presenceBox.withLock { $0 = newValue } }
    }

    /// - Parameters:
    ///   - accounts: the accounts; names must be unique.
    ///   - timers: RFC 3261 timers (defaults: T1 500 ms, T2 4 s).
    ///   - pacing: how fast one registrar gets REGISTERs; accounts of the same registrar host,
    ///     port and transport share one ``PacingWindow`` (after a flap they re-register as fast as
    ///     the registrar answers and no faster).
    ///   - metricsFactory: where the call instruments (`netres.calls.recovered`, `netres.calls.lost`,
    ///     `netres.call.recovery`) come from; nil for the
    ///     bootstrapped `MetricsSystem`.
    ///   - logger: SIP transactions and flows log here; never a password.
    ///   - logBudget: bounds the lines a peer can provoke (stray responses, lost flows, refused DNS
    ///     targets...) per kind for every account together; pass the process's to share it with
    ///     the rest of the process (a daemon's push lines), or leave the plugin its own.
    public init(
        accounts: [SIPAccount], timers: SIPTimers = SIPTimers(), pacing: PacingWindow.Settings = .init(),
        metricsFactory: (any MetricsFactory)? = nil, logBudget: LogBudget? = nil, logger: Logger
    ) {
        self.accounts = accounts
        self.accountsByName = Dictionary(accounts.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.callMetrics = CallMetrics(factory: metricsFactory ?? MetricsSystem.factory)
        self.logger = logger
        let (reports, reportContinuation) = AsyncStream.makeStream(of: PluginReport.self)
        self.reports = reports
        self.reportContinuation = reportContinuation
        var agents: [String: SIPUserAgent] = [:]
        var pacers: [String: RegistrarPacer] = [:]
        // One UDP socket per local address and registrar for all accounts (see `DatagramFlowHub`).
        // Its log holds the plugin's log budget, which every account shares (`SIPUserAgent`).
        let wireLog = ThrottledLog(
            logger: logger, clock: ContinuousClock(), budget: logBudget ?? ThrottledLog.newBudget())
        let flows = DatagramFlowHub(log: wireLog)
        // One RFC 3263 resolution per registrar name for all accounts (see `RegistrarDirectory`).
        let directory = RegistrarDirectory(logger: logger, log: wireLog)
        self.directory = directory
        for account in accounts {
            let registrar =
                "\(account.transport.rawValue):\(account.registrarHost.lowercased()):\(account.registrarPort)"
            let pacer = pacers[registrar] ?? RegistrarPacer(settings: pacing)
            pacers[registrar] = pacer
            agents[account.name] = SIPUserAgent(
                account: account, timers: timers, logger: logger, clock: ContinuousClock(), pacer: pacer,
                callSurvivalBudget: .seconds(30), flows: flows, directory: directory,
                onFlowLost: { reportContinuation.yield(.flowLost($0)) },
                onFlowActive: { reportContinuation.yield(.flowActive($0)) })
        }
        self.agents = agents
        self.routes = Mutex(SIPRouteTable(accounts: accounts))
        for (name, agent) in agents {
            agent.observeCalls { [weak self] event in self?.callChanged(event, account: name) }
        }
    }

    /// A call appeared, changed or ended: its service is added, changed or removed, with the
    /// kind the policy names (outgoing/incoming × progressing, alerting, active, held, remotely-held)
    /// and whether an interruption holds it (the call's hold reasons: the rules resume only those).
    private func callChanged(_ event: CallEvent, account name: String) {
        callMetrics.record(event)
        guard let account = accountsByName[name] else { return }
        let service = account.callService(event.call)
        guard let state = event.phase.serviceState else {
            if routes.withLock({ $0.remove(service) }) != nil { reportContinuation.yield(.serviceRemoved(service)) }
            return
        }
        let described = ClientService(
            id: service, kind: .call(event.direction, state), account: name,
            heldByInterruption: event.holdReasons.contains(.interruption))
        let added = routes.withLock { $0.add(.call(account: name, call: event.call), for: service) }
        reportContinuation.yield(added ? .serviceAdded(described) : .serviceChanged(described))
    }

    /// The actions the SIP plugin carries out (for the services of its accounts).
    public static let actions: Set<ActionKind> = [
        .register, .refreshRegistration, .unregisterOldContact, .unregister, .closeStaleTransports, .pingFlow,
        .releaseFlow, .subscribe, .refreshSubscription, .unsubscribe, .publishPresence, .holdCall, .resumeCall,
        .reinviteCall,
    ]

    /// The services this plugin keeps, for the manager's service table. The registration carries
    /// the account's flow-ping interval (one ping per flow); a registrar's `Flow-Timer` shows in
    /// ``RegistrationStatus/flowPingInterval`` once registered. These are the configured
    /// services; one added at run time (``addSubscription(_:account:)``) reaches the manager as a
    /// `serviceAdded` report instead.
    public var services: [ClientService] { accounts.flatMap(Self.configuredServices(of:)) }

    /// The configured services of one account (registration, subscriptions, publication).
    private static func configuredServices(of account: SIPAccount) -> [ClientService] {
        [
            ClientService(
                id: account.registrationService, kind: .registration, account: account.name,
                flowPingInterval: account.flowPingInterval)
        ]
            + account.subscriptions.map {
                ClientService(id: $0.service(of: account), kind: .subscription($0.package), account: account.name)
            }
            + (account.publishesPresence
                ? [ClientService(id: account.presencePublishService, kind: .presencePublish, account: account.name)]
                : [])
    }

    /// Its SIP actions, for the services it routes now (they change at run time).
    public func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        Self.actions.contains(kind) && routes.withLock { $0[service] } != nil
    }

    /// Adds a subscription of `account` at run time and tells the manager about its service;
    /// returns the service, or nil when the account is unknown or the service exists already.
    @discardableResult
    public func addSubscription(_ target: SubscriptionTarget, account name: String) -> ServiceID? {
        guard let account = accountsByName[name] else { return nil }
        let service = target.service(of: account)
        guard routes.withLock({ $0.add(.subscription(account: name, target: target), for: service) }) else {
            return nil
        }
        reportContinuation.yield(
            .serviceAdded(ClientService(id: service, kind: .subscription(target.package), account: name)))
        return service
    }

    /// Stops routing `service` and tells the manager; true when it was routed. Unsubscribe
    /// first (an `unsubscribe` action): removing the route sends nothing.
    @discardableResult
    public func removeService(_ service: ServiceID) -> Bool {
        guard routes.withLock({ $0.remove(service) }) != nil else { return false }
        reportContinuation.yield(.serviceRemoved(service))
        return true
    }

    /// Holds every account's answers to the server's requests while `path` is unsatisfied, and
    /// sends the BYEs of calls hung up meanwhile once it is satisfied again.
    public func pathChanged(_ path: NetworkPath) {
        // Another network may have other DNS servers and answers (RFC 3263 targets re-resolved).
        directory.networkChanged(ownAddresses: Set(path.addresses.map(\.address)))
        for agent in agents.values { agent.pathChanged(path) }
    }

    /// The user agent of an account: the plugin's own and the package's tests' way in (not
    /// public). Call commands go through the plugin's call API (`SIPPlugin+Calls.swift`), the
    /// one door for them.
    package func agent(for account: String) -> SIPUserAgent? { agents[account] }

    /// What the registrar last confirmed for an account; nil for an unknown account.
    public func registrationStatus(of account: String) async -> RegistrationStatus? {
        await agents[account]?.registrationStatus
    }

    /// Whether push can wake an account (RFC 8599); nil for an unknown account.
    public func isPushAvailable(for account: String) async -> Bool? { await agents[account]?.isPushAvailable }

    /// Sets (or clears) an account's push parameters; the next REGISTER carries them.
    /// - Returns: false for an unknown account.
    public func setPushParameters(_ parameters: PushParameters?, for account: String) async -> Bool {
        guard let agent = agents[account] else { return false }
        await agent.setPushParameters(parameters)
        return true
    }

    public func perform(_ action: PlannedAction, context: PluginContext) async throws {
        // The wake-up scheduler's refreshes are due well before expiry: their answers may be read
        // in one batch on a shared socket (ReadCoalescing) instead of one wake-up each.
        if case .refreshDue = action.trigger, !AnswerPatience.mayWait {
            return try await AnswerPatience.$mayWait.withValue(true) { try await perform(action, context: context) }
        }
        guard let route = routes.withLock({ $0[action.service] }) else {
            throw PluginError.permanent("sip: unknown service \(action.service)")
        }
        agents[route.account]?.lend(clock: context.clock)
        switch route {
        case .registration(let name):
            let agent = agents[name]!
            let before = await agent.registrationStatus
            switch action.kind {
            case .register, .refreshRegistration: try await agent.register(path: context.path)
            case .unregisterOldContact: try await agent.unregisterStaleContacts(path: context.path)
            case .unregister: try await agent.unregister(path: context.path)
            case .closeStaleTransports: await agent.closeStaleTransports(path: context.path)
            case .releaseFlow: await agent.releaseFlow()
            case .pingFlow: try await agent.sendFlowPing(path: context.path)
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a registration")
            }
            // Only a success gets here: a failed action leaves the service as the manager knows it.
            let forced = [.register, .refreshRegistration, .unregister].contains(action.kind)
            await reportRegistration(
                of: agent, service: action.service, since: before, context: context, forced: forced)
        case .subscription(let name, let target):
            let agent = agents[name]!
            switch action.kind {
            case .subscribe, .refreshSubscription:
                // A SUBSCRIBE on a flow no REGISTER went through registers first: that binding is
                // reported too, also when the SUBSCRIBE itself then fails.
                let before = await agent.registrationStatus
                let registration = agent.account.registrationService
                do {
                    try await agent.subscribe(target, service: action.service, path: context.path)
                } catch {
                    await reportRegistration(of: agent, service: registration, since: before, context: context)
                    throw error
                }
                await reportRegistration(of: agent, service: registration, since: before, context: context)
                let granted = await agent.subscriptionStatus(action.service).expires
                report(action.service) { $0.expires = granted.map { context.now.adding(clamped: .clampedSeconds($0)) } }
            case .unsubscribe:
                try await agent.unsubscribe(service: action.service, path: context.path)
                report(action.service) { $0.expires = nil }
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a subscription")
            }
        case .publication(let name):
            let agent = agents[name]!
            switch action.kind {
            case .publishPresence: try await agent.publishPresence(presence, path: context.path)
            case .unregister, .unsubscribe:
                try await agent.removePresence(path: context.path)
                report(action.service) { $0.expires = nil }
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a publication")
            }
        case .call(let name, let call):
            let agent = agents[name]!
            // The policy holds and resumes calls for interruptions only (rules `interrupted-hold`,
            // `interruption-ended-resume`, `restore-resume`): a call the user held stays held.
            // The policy's `call-survival-budget` comes with the action (the one source).
            let budget = context.callSurvivalBudget
            switch action.kind {
            case .holdCall: try await agent.hold(call, reason: .interruption, path: context.path)
            case .resumeCall:
                // A resume on the path's return is a recovery too: an outage over budget ends it.
                let survival = SurvivalCheck(loss: context.lastPathLoss, budget: budget ?? agent.callSurvivalBudget)
                try await agent.resume(call, reason: .interruption, path: context.path, survival: survival)
            case .reinviteCall:
                try await agent.reinvite(call, path: context.path, after: context.lastPathLoss, budget: budget)
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a call")
            }
        }
    }

    /// Reports an account's registration service as changed when its status differs from
    /// `before` (or always when `forced`): its expiry from the action's `now` and its flow-ping
    /// interval, so the manager re-arms the refresh of a binding whatever action made it.
    private func reportRegistration(
        of agent: SIPUserAgent, service: ServiceID, since before: RegistrationStatus, context: PluginContext,
        forced: Bool = false
    ) async {
        let after = await agent.registrationStatus
        guard forced || after != before else { return }
        report(service) { service in
            service.expires = after.expires.map { context.now.adding(clamped: .clampedSeconds($0)) }
            service.flowPingInterval = after.flowPingInterval
        }
    }

    /// Reports a service as changed: the plugin's description of it (``services``) with `change`.
    /// Looks at the service's own account only: with every account's services (``services``)
    /// each report cost O(accounts), and 1,000 accounts re-registering after a flap O(accounts²).
    private func report(_ id: ServiceID, _ change: (inout ClientService) -> Void) {
        guard let name = routes.withLock({ $0[id] })?.account, let account = accountsByName[name],
            var service = Self.configuredServices(of: account).first(where: { $0.id == id })
        else { return }
        change(&service)
        reportContinuation.yield(.serviceChanged(service))
    }

    /// Waits for shutdown; the manager's shutdown policy unregisters before this returns, and the
    /// flows are closed here.
    public func run() async throws {
        try? await gracefulShutdown()
        for agent in agents.values { await agent.close() }
        reportContinuation.finish()
    }
}
