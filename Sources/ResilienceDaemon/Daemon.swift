public import Logging
import NIOPosix
import NetlinkMonitor
public import ResilienceCore
import ResilienceHooks
public import ResiliencePolicyFile
import ResilienceRules
public import ResilienceRuntime
public import SIPPlugin
public import ServiceLifecycle
public import UnixSignals

/// `netres run` assembled: network source, SIP plugin, manager, event log and control socket.
///
/// Invariants:
/// - Every service of every account is registered with the manager before it runs.
/// - A registration's or subscription's granted expiry is reported back to the manager after each
///   success, which arms the coalesced refresh; a registration's flow-ping interval
///   (the registrar's Flow-Timer, else the account's) arms its flow pings, and unregistering
///   stops them.
/// - Shutdown order (reverse of ``services``): manager teardown (unsubscribe, unregister) first,
///   then the control socket, then the event log, which drains the manager's last events.
/// - Passwords live only in the SIP accounts; nothing here renders them.
/// - The config's app state is the manager's from the start: the rules engine and the wake-up
///   scheduler begin in it before `started` is decided, so a daemon started in the background
///   never pings at the foreground interval.
/// - Every runtime timer is an ``EventLoopClock`` sleep unless a test passes its own clock: a
///   cancelled timer (an action's timeout, a re-armed wake-up) never wakes the process.
/// - With `hooks` configured, every transition the manager reports is handed to a ``HookRunner``
///   (which never blocks the event log); ``stop()`` ends its hooks.
public final class Daemon: Sendable {
    public typealias Output = @Sendable (String) async -> Void

    public let config: DaemonConfig
    public let plugin: SIPPlugin
    public let manager: ResilienceManager
    let monitor: NetlinkMonitor?
    let output: Output
    let book = OutcomeBook()
    let events: AsyncStream<ResilienceEvent>
    let logger: Logger
    let hooks: HookRunner?

    /// - Parameters:
    ///   - source: the network; nil for a `NetlinkMonitor` on the config's interfaces.
    ///   - output: receives one rendered line per event, in order.
    /// - Throws: ``PolicyFileError`` when the policy file is invalid.
    public init(
        config: DaemonConfig, source: (any NetworkEventSource)? = nil, shutdownTimeout: Duration = .seconds(5),
        clock: (any RuntimeClock)? = nil, output: @escaping Output, logger: Logger
    ) throws(PolicyFileError) {
        var policy = Policy.default
        if let path = config.policyPath { policy = try PolicyFile.load(path: path).policy }
        if let holdDown = config.holdDown { policy.holdDown = holdDown }
        let accounts = config.accounts.map { entry in
            var account = entry.account
            if let push = entry.push, let token = PushTokenStore.read(push.tokenFile) {
                account.push = PushParameters(provider: push.provider, prid: token, param: push.param)
            }
            return account
        }
        let monitor: NetlinkMonitor?
        let network: any NetworkEventSource
        if let source {
            (monitor, network) = (nil, source)
        } else {
            // No hold-down here: the manager applies the policy's (the one place it is applied).
            let owned = NetlinkMonitor(filter: InterfaceFilter(config.interfaces), logger: logger)
            (monitor, network) = (owned, owned)
        }
        self.config = config
        self.monitor = monitor
        self.output = output
        self.logger = logger
        self.plugin = SIPPlugin(
            accounts: accounts, pacing: PacingWindow.Settings(ceiling: config.registerRateCeiling), logger: logger)
        self.manager = ResilienceManager(
            source: network, policy: policy, plugins: [plugin], appState: config.appState,
            clock: clock ?? EventLoopClock(eventLoop: MultiThreadedEventLoopGroup.singleton.next()),
            configuration: .init(shutdownTimeout: shutdownTimeout), logger: logger)
        self.events = manager.events()
        self.hooks = config.hooks.map { HookRunner(directory: $0.directory, timeout: $0.timeout, logger: logger) }
    }

    /// Starts netlink (when the daemon owns the monitor) and registers every service.
    /// - Throws: the monitor's error when netlink cannot be opened.
    public func start() async throws {
        try await monitor?.start()
        for service in plugin.services { await manager.register(service) }
    }

    /// Stops netlink and hooks (a running hook gets its timeout); call after the service group returned.
    public func stop() async {
        await monitor?.shutdown()
        await hooks?.stop()
    }

    /// The services to run, in start order (shut down in reverse).
    public var services: [any Service] {
        [
            EventFollower(daemon: self), ControlServer(path: config.controlSocket) { await self.handle(line: $0) },
            manager,
        ]
    }

    /// A group running ``services`` that shuts down gracefully on `signals`.
    public func makeGroup(signals: [UnixSignal] = [.sigterm, .sigint]) -> ServiceGroup {
        ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) }, gracefulShutdownSignals: signals, logger: logger))
    }

    /// Answers one control-socket line.
    public func handle(line: String) async -> String {
        let command: ControlCommand
        do {
            command = try ControlCommand.parse(line)
        } catch {
            return "error: \(error)\n"
        }
        switch command {
        case .state(let state):
            await manager.setAppState(state)
            return "ok state \(state.rawValue)\n"
        case .status(let json):
            let report = await statusReport()
            return (json ? report.json : report.human) + "\n"
        case .pushToken(let name, let token):
            guard let entry = config.accounts.first(where: { $0.account.name == name }) else {
                return "error: no account \"\(name)\"\n"
            }
            guard let push = entry.push, let agent = plugin.agent(for: name) else {
                return "error: account \"\(name)\" has no push settings (push: { provider, token-file })\n"
            }
            do {
                try PushTokenStore.write(token, to: push.tokenFile)
            } catch {
                return "error: \(error)\n"
            }
            await agent.setPushParameters(PushParameters(provider: push.provider, prid: token, param: push.param))
            await manager.pushTokenChanged()
            return "ok push-token \(name)\n"
        }
    }
}

/// Logs every manager event and feeds expiries and flow-ping intervals back to the manager; finishes when the manager's
/// event stream does (after its teardown).
struct EventFollower: Service {
    let daemon: Daemon

    func run() async throws {
        var renderer = DaemonLogLine(json: daemon.config.logFormat == .json)
        for await event in daemon.events {
            await daemon.output(renderer.render(event))
            switch event {
            case .action(let action):
                await daemon.book.record(action)
                if action.outcome == .succeeded { await reportExpiry(of: action) }
            case .transition(let transition):
                daemon.hooks?.submit(transition)
            default:
                break
            }
        }
        // The stream ends after the manager's teardown, before this service's turn to shut down;
        // a service group treats an early return as a failure.
        try? await gracefulShutdown()
    }

    private func reportExpiry(of event: ActionEvent) async {
        let id = event.action.service
        guard let service = await daemon.manager.status().services.first(where: { $0.id == id }),
            let name = service.account, let agent = daemon.plugin.agent(for: name)
        else { return }
        var updated = service
        switch (service.kind, event.action.kind) {
        case (.registration, .register), (.registration, .refreshRegistration):
            let status = await agent.registrationStatus
            updated.expires = status.expires.map { event.at + .seconds($0) }
            // The registrar's Flow-Timer, when it sent one, replaces the account's interval.
            updated.flowPingInterval = status.flowPingInterval
        case (.subscription, .subscribe), (.subscription, .refreshSubscription):
            updated.expires = await agent.subscriptionStatus(id).expires.map { event.at + .seconds($0) }
        case (.registration, .unregister):
            updated.expires = nil
            updated.flowPingInterval = nil
        case (_, .unregister), (_, .unsubscribe):
            updated.expires = nil
        default:
            return
        }
        await daemon.manager.update(updated)
    }
}
