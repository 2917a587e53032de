public import Logging
import NetlinkMonitor
public import ResilienceCore
import ResilienceHooks
import ResilienceOutput
public import ResiliencePolicyFile
import ResilienceRules
public import ResilienceRuntime
public import SIPPlugin
public import ServiceLifecycle
internal import Synchronization
public import UnixSignals

/// `netres run` assembled: network source, SIP plugin, manager, event log and control socket.
///
/// Invariants:
/// - Every service of every account is registered with the manager before it runs.
/// - Expiries and flow-ping intervals reach the manager from the plugin itself
///   (`SIPPlugin.reports`); the daemon only logs events, feeds the status book and the hooks.
///   It uses SIPPlugin to build the plugin and through the plugin's methods, never an agent.
/// - Shutdown order (reverse of ``services``): manager teardown (unsubscribe, unregister) first,
///   then the control socket, then the event log, which drains the manager's last events.
/// - Passwords live only in the SIP accounts; nothing here renders them.
/// - An account without a configured `outbound.instance-id` gets the persistent one of the
///   ``InstanceStore`` in `state-directory`, so a restart replaces its binding at the registrar.
/// - ``start()`` takes the config's ``InstanceLock`` first: a second daemon for the same control
///   socket fails there, before it opens netlink, binds the socket or registers anything.
/// - With `metrics` configured, every manager event is counted (``DaemonMetrics``) and served on
///   `GET /metrics`; the executor records into the same registry.
/// - Under systemd (`NOTIFY_SOCKET` set) `READY=1` is sent once the first path is known, and with
///   `WATCHDOG_USEC` set, `WATCHDOG=1` every half interval as long as the manager answers.
/// - The config's app state is the manager's from the start: the rules engine and the wake-up
///   scheduler begin in it before `started` is decided, so a daemon started in the background
///   never pings at the foreground interval.
/// - Every runtime timer is an ``EventLoopClock`` sleep unless a test passes its own clock: a
///   cancelled timer (an action's timeout, a re-armed wake-up) never wakes the process.
/// - With `hooks` configured, every transition the manager reports and every call event is
///   handed to a ``HookRunner`` (which never blocks the event log); ``stop()`` ends its hooks.
/// - Calls (`netres ctl call`, `answer`, `hangup`, `hold`, `resume`, `calls`) go through each
///   account's agent's public call API (the plugin has no call commands of its own) in the
///   ``CallDesk``; every call event is logged (``CallEventLine``), counted and handed to the hooks.
public final class Daemon: Sendable {
    public typealias Output = @Sendable (String) async -> Void

    /// The longest a graceful stop takes, from SIGTERM to the return of ``stop()``, whatever the
    /// registrar does (a running hook may add its own timeout, see ``stop()``). It is spent as:
    /// teardown (unsubscribe, unregister) ``teardownTimeout``, the plugins' stop (closing flows)
    /// ``pluginStopTimeout``, and the rest (control socket, event log, netlink) in what remains.
    public static let shutdownBound: Duration = .seconds(5)
    public static let teardownTimeout: Duration = .seconds(4)
    public static let pluginStopTimeout: Duration = .milliseconds(500)

    public let config: DaemonConfig
    public let plugin: SIPPlugin
    public let manager: ResilienceManager
    let monitor: NetlinkMonitor?
    let output: Output
    let book = OutcomeBook()
    let events: AsyncStream<ResilienceEvent>
    let logger: Logger
    let hooks: HookRunner?
    let lock = Mutex<InstanceLock?>(nil)
    /// The calls placed and received, for `netres ctl`.
    let calls: CallDesk
    /// The MESSAGEs received, for `netres ctl messages`.
    let messages = MessageBook()
    /// Keeps a flood of call events out of the log and the hooks (``CallEventThrottle``).
    let callEventThrottle = CallEventThrottle()
    /// The process's budget of lines others can provoke: the SIP plugin's wire lines and a push's.
    let logBudget = LogBudget()
    /// The metrics `netres run` exports; nil unless the config has `metrics:`.
    public let metrics: DaemonMetrics?
    /// Serves ``metrics`` on `GET /metrics`; nil unless the config has `metrics:`.
    public let metricsEndpoint: MetricsEndpoint?
    /// Tells systemd when the daemon is ready and that its manager still answers.
    let systemd: SystemdNotifier?
    /// The external plugins (over the control socket), as one plugin of the manager.
    public let externalPlugins: ExternalPluginHub
    /// The event stream of `netres ctl events` and of sessions that asked for it.
    let eventFeed = EventFeed()

    /// - Parameters:
    ///   - source: the network; nil for a `NetlinkMonitor` on the config's interfaces.
    ///   - environment: where `NOTIFY_SOCKET` and `WATCHDOG_USEC` are read (systemd's `Type=notify`).
    ///   - output: receives one rendered line per event, in order.
    /// - Throws: ``PolicyFileError`` when the policy file is invalid.
    public init(
        config: DaemonConfig, source: (any NetworkEventSource)? = nil,
        shutdownTimeout: Duration = Daemon.teardownTimeout, clock: (any RuntimeClock)? = nil,
        environment: [String: String] = SystemdNotifier.processEnvironment, output: @escaping Output, logger: Logger
    ) throws(PolicyFileError) {
        var policy = Policy.default
        if let path = config.policyPath { policy = try PolicyFile.load(path: path).policy }
        if let holdDown = config.holdDown { policy.holdDown = holdDown }
        let accounts = config.accounts.map { entry in
            var account = entry.account
            if account.instanceID == nil, let directory = config.stateDirectory {
                do {
                    account.instanceID = try InstanceStore.instance(of: account.name, in: directory)
                } catch {
                    logger.warning(
                        "no persistent +sip.instance; a restart may leave the old binding",
                        metadata: ["account": "\(account.name)", "error": "\(error)"])
                }
            }
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
        let metrics = config.metrics.map { _ in DaemonMetrics() }
        self.plugin = SIPPlugin(
            accounts: accounts, timers: SIPTimers(pongTimeout: config.flowPingTimeout),
            pacing: PacingWindow.Settings(ceiling: config.registerRateCeiling),
            metricsFactory: metrics?.factory, logBudget: logBudget, logger: logger)
        self.metrics = metrics
        self.metricsEndpoint = config.metrics.map { MetricsEndpoint(config: $0, metrics: metrics!, logger: logger) }
        let runtimeClock = clock ?? EventLoopClock.onSingletonGroup()
        let ownServices = Set(plugin.services.map(\.id))
        self.externalPlugins = ExternalPluginHub(logger: logger, isReserved: { ownServices.contains($0) })
        let manager = ResilienceManager(
            source: network, policy: policy, plugins: [plugin, externalPlugins], appState: config.appState,
            clock: runtimeClock,
            configuration: .init(
                shutdownTimeout: shutdownTimeout, metricsFactory: metrics?.factory,
                pluginShutdownTimeout: Self.pluginStopTimeout),
            logger: logger)
        self.manager = manager
        self.systemd = SystemdNotifier(environment: environment)
        self.events = manager.events()
        self.calls = CallDesk(
            plugin: plugin, accounts: config.accounts, path: { await manager.status().path }, logger: logger,
            clock: runtimeClock)
        self.hooks = config.hooks.map { HookRunner(directory: $0.directory, timeout: $0.timeout, logger: logger) }
    }

    /// Takes the instance lock, starts netlink (when the daemon owns the monitor) and registers
    /// every service.
    /// - Throws: ``DaemonError`` naming the running instance's PID when one holds the lock; the
    ///   monitor's error when netlink cannot be opened.
    public func start() async throws {
        let acquired = try InstanceLock.acquire(socket: config.controlSocket)
        lock.withLock { $0 = acquired }
        try await monitor?.start()
        for service in plugin.services { await manager.register(service) }
        await announcePushAvailability()
    }

    /// Stops netlink and hooks (a running hook gets its timeout); call after the service group returned.
    public func stop() async {
        await monitor?.shutdown()
        await hooks?.stop()
        lock.withLock { held in
            held?.release()
            held = nil
        }
    }

    /// The services to run, in start order (shut down in reverse).
    public var services: [any Service] {
        var services: [any Service] = [EventFollower(daemon: self), CallFollower(daemon: self)]
        if let metricsEndpoint { services.append(metricsEndpoint) }
        if let systemd, systemd.watchdogInterval != nil {
            services.append(WatchdogPinger(notifier: systemd, manager: manager))
        }
        services.append(
            ControlServer(
                path: config.controlSocket, access: ControlAccess(group: config.controlGroup), logger: logger,
                sessions: ExternalPluginSessions(
                    hub: externalPlugins, feed: eventFeed, logger: logger, command: { await self.handle(line: $0) },
                    push: { await self.handlePush($0) }
                ).handler
            ) { await self.handle(line: $0) })
        services.append(manager)
        return services
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
            guard let push = entry.push else {
                return "error: account \"\(name)\" has no push settings (push: { provider, token-file })\n"
            }
            do {
                try PushTokenStore.write(token, to: push.tokenFile)
            } catch {
                return "error: \(error)\n"
            }
            _ = await plugin.setPushParameters(
                PushParameters(provider: push.provider, prid: token, param: push.param), for: name)
            await manager.setPushAvailable(true, for: name)
            await manager.pushTokenChanged()
            return "ok push-token \(name)\n"
        case .push(let push):
            return await handlePush(push)
        case .messages(let json):
            return await messages.listing(json: json) + "\n"
        case .call, .callControl, .interruption, .calls:
            return await handleCall(command)
        }
    }
}

/// Logs every manager event, records action outcomes for status and hands transitions to the
/// hooks; finishes when the manager's event stream does (after its teardown).
struct EventFollower: Service {
    let daemon: Daemon

    func run() async throws {
        var renderer = DaemonLogLine(json: daemon.config.logFormat == .json)
        var feedRenderer = DaemonLogLine(json: true)
        var ready = false
        for await event in daemon.events {
            // The log is budgeted per kind (a push flood); the event feed has its own bound.
            let admitted = await daemon.admitsLine(for: event)
            let listened = daemon.eventFeed.hasSubscribers
            var json: String?
            if admitted {
                let rendered = renderer.render(event)
                await daemon.output(rendered)
                if renderer.json { json = rendered }
            }
            // The feed's JSON renderer sees every transition, so its numbers are the log's.
            if json == nil, listened || { if case .transition = event { true } else { false } }() {
                json = feedRenderer.render(event)
            }
            if listened, let json, let line = ExternalPluginLines.event(json) { daemon.eventFeed.publish(line) }
            daemon.metrics?.observe(event)
            if !ready, case .transition = event {
                ready = true  // the first path is known: `.initial` is always the first transition
                daemon.systemd?.notify("READY=1")
            }
            switch event {
            case .action(let action):
                await daemon.book.record(action)
                await daemon.recordRecovery(action)
            case .transition(let transition): daemon.hooks?.submit(transition)
            default: break
            }
        }
        // The stream ends after the manager's teardown, before this service's turn to shut down;
        // a service group treats an early return as a failure.
        try? await gracefulShutdown()
    }
}
