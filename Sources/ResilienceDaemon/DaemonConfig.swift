public import ResilienceCore
public import SIPPlugin

/// What `netres run --config FILE` runs: logging, control socket, network filter, policy and the
/// SIP accounts.
///
/// Invariants: every path is absolute (relative paths in the file are resolved against the
/// config file's directory); passwords are already read from their files; `description` of the
/// config and its accounts never shows a password.
public struct DaemonConfig: Hashable, Sendable {
    public enum LogFormat: String, Hashable, Sendable, CaseIterable {
        case human
        case json
    }

    public var logFormat: LogFormat
    /// Unix socket path of the control socket (mode 0600, parent directory created 0700).
    public var controlSocket: String
    /// Members of this group (its gid, from `control-group: NAME`) may use the control socket
    /// besides root and the daemon's user; the socket is then mode 0660 and the group's.
    public var controlGroup: UInt32?
    /// Interface names or globs; empty means every interface counts.
    public var interfaces: [String]
    /// Overrides the policy's hold-down when set.
    public var holdDown: Duration?
    public var appState: AppState
    /// Most REGISTER transactions per second to one registrar (the pacing window's ceiling).
    public var registerRateCeiling: Int
    /// How long a flow ping may wait for its answer before the flow counts as dead (and the
    /// account fails over): 1 s to 10 s, RFC 5626 §4.4.1's 10 s by default.
    public var flowPingTimeout: Duration = .seconds(10)
    /// Policy file; nil means the built-in default policy.
    public var policyPath: String?
    public var accounts: [DaemonAccount]
    /// Hook scripts run on every path transition; nil runs none.
    public var hooks: HooksConfig?
    /// Where each account's `+sip.instance` is kept across restarts (``InstanceStore``); nil
    /// keeps none (a config file defaults to ``defaultStateDirectory``).
    public var stateDirectory: String?
    /// The Prometheus endpoint; nil (the default) serves none.
    public var metrics: MetricsConfig?

    public init(
        logFormat: LogFormat = .human, controlSocket: String = DaemonConfig.defaultControlSocket,
        interfaces: [String] = [], holdDown: Duration? = nil, appState: AppState = .foreground,
        policyPath: String? = nil, accounts: [DaemonAccount] = [], hooks: HooksConfig? = nil,
        stateDirectory: String? = nil,
        metrics: MetricsConfig? = nil,
        registerRateCeiling: Int = PacingWindow.Settings().ceiling
    ) {
        self.registerRateCeiling = registerRateCeiling
        self.metrics = metrics
        self.logFormat = logFormat
        self.controlSocket = controlSocket
        self.interfaces = interfaces
        self.holdDown = holdDown
        self.appState = appState
        self.policyPath = policyPath
        self.accounts = accounts
        self.hooks = hooks
        self.stateDirectory = stateDirectory
    }

    public static let defaultControlSocket = "/run/netres/control.sock"
    public static let defaultStateDirectory = "/var/lib/netres"
}

/// One account of the config: the SIP account plus where its push token lives and what
/// happens to its incoming calls.
///
/// Invariant: `account.push` is nil here; the token is read from `push.tokenFile` at start-up.
public struct DaemonAccount: Hashable, Sendable, CustomStringConvertible {
    public var account: SIPAccount
    public var push: PushConfig?
    public var incomingCalls: IncomingCalls

    public init(account: SIPAccount, push: PushConfig? = nil, incomingCalls: IncomingCalls = .ring) {
        self.account = account
        self.push = push
        self.incomingCalls = incomingCalls
    }

    public var description: String { account.description }
}

/// What `netres run` does with an incoming call of an account (`incoming-calls:`). In every
/// case the agent has already sent 180 Ringing, and the call is logged, handed to the hooks
/// and listed by `netres ctl calls`, whatever the app state.
public enum IncomingCalls: String, Hashable, Sendable, CaseIterable {
    /// Keep it ringing until `netres ctl answer ID` or `netres ctl hangup ID` (the default).
    case ring
    /// Answer it at once with the built-in echo media.
    case answer
    /// Decline it at once (603 Decline).
    case reject
}

/// RFC 8599 push settings of an account; the token (`pn-prid`) is persisted in `tokenFile`.
public struct PushConfig: Hashable, Sendable {
    public var provider: String
    public var param: String?
    public var tokenFile: String

    public init(provider: String, param: String? = nil, tokenFile: String) {
        self.provider = provider
        self.param = param
        self.tokenFile = tokenFile
    }
}

/// Where hook scripts live and how long each may run.
///
/// Invariant: `directory` is absolute and was a directory when the config was read.
public struct HooksConfig: Hashable, Sendable {
    public var directory: String
    public var timeout: Duration

    public init(directory: String, timeout: Duration = .seconds(10)) {
        self.directory = directory
        self.timeout = timeout
    }
}

/// Where `netres run` serves its Prometheus metrics (`GET /metrics`).
///
/// Invariant: off unless the config has a `metrics:` key; on, it listens on loopback unless
/// `address` says otherwise. Port 0 picks a free port (tests).
public struct MetricsConfig: Hashable, Sendable {
    public var address: String
    public var port: Int

    public init(address: String = "127.0.0.1", port: Int = MetricsConfig.defaultPort) {
        self.address = address
        self.port = port
    }

    /// 9464, the port OpenTelemetry's Prometheus exporter uses by convention.
    public static let defaultPort = 9464
}
