public import Logging
public import ResilienceCore
internal import ServiceLifecycle
internal import Synchronization

/// The SIP plugin: one ``SIPUserAgent`` per account, driven by planned actions.
///
/// Services: `<account>.registration` for each account, plus one per configured subscription
/// (see ``SubscriptionTarget/service(of:)``). The local address comes from the action's
/// ``PluginContext/path``; the plugin never reads netlink.
public final class SIPPlugin: ResiliencePlugin {
    public let id = "sip"
    public let accounts: [SIPAccount]
    private let agents: [String: SIPUserAgent]
    /// Grows and shrinks at run time (``addSubscription(_:account:)``, ``removeService(_:)``).
    private let routes: Mutex<SIPRouteTable>
    private let logger: Logger
    private let presenceBox = Mutex(PresenceDocument(isOpen: true))
    /// Each agent's lost flows, as the services that rode on them; the newest few are kept when
    /// the manager falls behind (a later report names the same services).
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
    public init(
        accounts: [SIPAccount], timers: SIPTimers = SIPTimers(), pacing: PacingWindow.Settings = .init(),
        logger: Logger
    ) {
        self.accounts = accounts
        self.logger = logger
        let (reports, reportContinuation) = AsyncStream.makeStream(
            of: PluginReport.self, bufferingPolicy: .bufferingNewest(8))
        self.reports = reports
        self.reportContinuation = reportContinuation
        var agents: [String: SIPUserAgent] = [:]
        var pacers: [String: RegistrarPacer] = [:]
        for account in accounts {
            let registrar =
                "\(account.transport.rawValue):\(account.registrarHost.lowercased()):\(account.registrarPort)"
            let pacer = pacers[registrar] ?? RegistrarPacer(settings: pacing)
            pacers[registrar] = pacer
            agents[account.name] = SIPUserAgent(account: account, timers: timers, logger: logger, pacer: pacer) {
                services in
                reportContinuation.yield(.flowLost(services))
            }
        }
        self.agents = agents
        self.routes = Mutex(SIPRouteTable(accounts: accounts))
    }

    /// The actions the SIP plugin carries out (for the services of its accounts).
    public static let actions: Set<ActionKind> = [
        .register, .refreshRegistration, .unregisterOldContact, .unregister, .closeStaleTransports, .pingFlow,
        .subscribe, .refreshSubscription, .unsubscribe, .publishPresence,
    ]

    /// The services this plugin keeps, for the manager's service table. The registration carries
    /// the account's flow-ping interval (one ping per flow); a registrar's `Flow-Timer` shows in
    /// ``RegistrationStatus/flowPingInterval`` once registered. These are the configured
    /// services; one added at run time (``addSubscription(_:account:)``) reaches the manager as a
    /// `serviceAdded` report instead.
    public var services: [ClientService] {
        accounts.flatMap { account in
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
    }

    /// Its SIP actions, for the services it routes now (they change at run time).
    public func performs(_ kind: ActionKind, for service: ServiceID) -> Bool {
        Self.actions.contains(kind) && routes.withLock { $0[service] } != nil
    }

    /// Adds a subscription of `account` at run time and tells the manager about its service;
    /// returns the service, or nil when the account is unknown or the service exists already.
    @discardableResult
    public func addSubscription(_ target: SubscriptionTarget, account name: String) -> ServiceID? {
        guard let account = accounts.first(where: { $0.name == name }) else { return nil }
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

    /// The user agent of an account (for status and tests).
    public func agent(for account: String) -> SIPUserAgent? { agents[account] }

    public func perform(_ action: PlannedAction, context: PluginContext) async throws {
        guard let route = routes.withLock({ $0[action.service] }) else {
            throw PluginError.permanent("sip: unknown service \(action.service)")
        }
        agents[route.account]?.lend(clock: context.clock)
        switch route {
        case .registration(let name):
            let agent = agents[name]!
            switch action.kind {
            case .register, .refreshRegistration: try await agent.register(path: context.path)
            case .unregisterOldContact: try await agent.unregisterStaleContacts(path: context.path)
            case .unregister: try await agent.unregister(path: context.path)
            case .closeStaleTransports: await agent.closeStaleTransports(path: context.path)
            case .pingFlow: try await agent.sendFlowPing(path: context.path)
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a registration")
            }
        case .subscription(let name, let target):
            let agent = agents[name]!
            switch action.kind {
            case .subscribe, .refreshSubscription:
                try await agent.subscribe(target, service: action.service, path: context.path)
            case .unsubscribe: try await agent.unsubscribe(service: action.service, path: context.path)
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a subscription")
            }
        case .publication(let name):
            let agent = agents[name]!
            switch action.kind {
            case .publishPresence: try await agent.publishPresence(presence, path: context.path)
            case .unregister, .unsubscribe: try await agent.removePresence(path: context.path)
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a publication")
            }
        }
    }

    /// Waits for shutdown; the manager's shutdown policy unregisters before this returns, and the
    /// flows are closed here.
    public func run() async throws {
        try? await gracefulShutdown()
        for agent in agents.values { await agent.close() }
        reportContinuation.finish()
    }
}
