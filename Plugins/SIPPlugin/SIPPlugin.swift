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
    private let routes: [ServiceID: Route]
    private let logger: Logger
    private let presenceBox = Mutex(PresenceDocument(isOpen: true))
    /// What the agents learned, for the manager (see ``PluginReport``):
    /// - `.serviceChanged` after every action that changed a service: a registration's granted
    ///   expiry and keep-alive interval (the registrar's Flow-Timer, else the account's), a
    ///   subscription's granted expiry, and both cleared by unregister/unsubscribe; instants are
    ///   the action's ``PluginContext/now`` plus the granted seconds (clamped by the agent);
    /// - `.flowLost` for each flow the server ended, and for a subscription the notifier ended
    ///   (RFC 6665 §4.1.3), so the runtime re-subscribes (or records the permanent failure).
    ///
    /// Unbounded on purpose: a dropped `.serviceChanged` would leave a stale expiry. Reports come
    /// from actions (one each) and from state transitions of the configured services (a
    /// subscription ends once per dialog), so a peer cannot make them pile up.
    public let reports: AsyncStream<PluginReport>
    private let reportContinuation: AsyncStream<PluginReport>.Continuation

    /// The presence the next `publish-presence` action publishes.
    public var presence: PresenceDocument {
        get { presenceBox.withLock { $0 } }
        set { presenceBox.withLock { $0 = newValue } }
    }

    enum Route: Sendable {
        case registration(account: String)
        case subscription(account: String, target: SubscriptionTarget)
        case publication(account: String)
    }

    /// - Parameters:
    ///   - accounts: the accounts; names must be unique.
    ///   - timers: RFC 3261 timers (defaults: T1 500 ms, T2 4 s).
    public init(accounts: [SIPAccount], timers: SIPTimers = SIPTimers(), logger: Logger) {
        self.accounts = accounts
        self.logger = logger
        let (reports, reportContinuation) = AsyncStream.makeStream(of: PluginReport.self)
        self.reports = reports
        self.reportContinuation = reportContinuation
        var agents: [String: SIPUserAgent] = [:]
        var routes: [ServiceID: Route] = [:]
        for account in accounts {
            agents[account.name] = SIPUserAgent(account: account, timers: timers, logger: logger) { services in
                reportContinuation.yield(.flowLost(services))
            }
            routes[account.registrationService] = .registration(account: account.name)
            if account.publishesPresence {
                routes[account.presencePublishService] = .publication(account: account.name)
            }
            for target in account.subscriptions {
                routes[target.service(of: account)] = .subscription(account: account.name, target: target)
            }
        }
        self.agents = agents
        self.routes = routes
    }

    public var supportedActions: Set<ActionKind> {
        [
            .register, .refreshRegistration, .unregisterOldContact, .unregister, .closeStaleTransports, .keepAlive,
            .subscribe, .refreshSubscription, .unsubscribe, .publishPresence,
        ]
    }

    /// The services this plugin keeps, for the manager's service table. The registration carries
    /// the account's keep-alive interval (one ping per flow); a registrar's `Flow-Timer` shows in
    /// ``RegistrationStatus/keepAliveInterval`` once registered.
    public var services: [ClientService] {
        accounts.flatMap { account in
            [
                ClientService(
                    id: account.registrationService, kind: .registration, account: account.name,
                    keepAliveInterval: account.keepAliveInterval)
            ]
                + account.subscriptions.map {
                    ClientService(id: $0.service(of: account), kind: .subscription($0.package), account: account.name)
                }
                + (account.publishesPresence
                    ? [ClientService(id: account.presencePublishService, kind: .presencePublish, account: account.name)]
                    : [])
        }
    }

    public func handles(_ service: ServiceID) -> Bool { routes[service] != nil }

    /// The user agent of an account (for tests).
    public func agent(for account: String) -> SIPUserAgent? { agents[account] }

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
        guard let route = routes[action.service] else {
            throw PluginError.permanent("sip: unknown service \(action.service)")
        }
        switch route {
        case .registration(let name):
            let agent = agents[name]!
            let before = await agent.registrationStatus
            switch action.kind {
            case .register, .refreshRegistration: try await agent.register(path: context.path)
            case .unregisterOldContact: try await agent.unregisterStaleContacts(path: context.path)
            case .unregister: try await agent.unregister(path: context.path)
            case .closeStaleTransports: await agent.closeStaleTransports(path: context.path)
            case .keepAlive: try await agent.sendKeepAlive(path: context.path)
            default: throw PluginError.permanent("sip: \(action.kind) does not apply to a registration")
            }
            // Only a success gets here: a failed action leaves the service as the manager knows it.
            let after = await agent.registrationStatus
            if after != before || [.register, .refreshRegistration, .unregister].contains(action.kind) {
                report(action.service) { service in
                    service.expires = after.expires.map { context.now + .seconds($0) }
                    service.keepAliveInterval = after.keepAliveInterval
                }
            }
        case .subscription(let name, let target):
            let agent = agents[name]!
            switch action.kind {
            case .subscribe, .refreshSubscription:
                try await agent.subscribe(target, service: action.service, path: context.path)
                let granted = await agent.subscriptionStatus(action.service).expires
                report(action.service) { $0.expires = granted.map { context.now + .seconds($0) } }
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
        }
    }

    /// Reports a service as changed: the plugin's description of it (``services``) with `change`.
    private func report(_ id: ServiceID, _ change: (inout ClientService) -> Void) {
        guard var service = services.first(where: { $0.id == id }) else { return }
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
