internal import Foundation
import ResilienceCore
import ResilienceHooks
public import ResiliencePolicyFile
import SIPPlugin
import Yams

/// Reads the YAML config of `netres run`, with the policy file's located errors and name hints.
///
/// Invariant: never traps on any input; every rejection is a ``PolicyFileError`` naming the file,
/// line and column (of the offending key or value) and, for a near miss, the nearest valid name.
/// Error messages never include a password.
public enum DaemonConfigFile {
    /// Reads and parses the config at `path`; relative paths inside resolve against its directory.
    public static func load(path: String) throws(PolicyFileError) -> DaemonConfig {
        let text = try PolicyFile.readText(path: path)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try parse(text, file: path, directory: directory)
    }

    /// Parses config text; `directory` anchors relative paths (password, token and policy files).
    public static func parse(_ text: String, file: String, directory: String) throws(PolicyFileError) -> DaemonConfig {
        let reader = LocatedYAML(file: file)
        guard let root = try PolicyFile.compose(text, file: file) else {
            throw PolicyFileError(
                .empty, file: file, line: 1, column: 1, message: "the file has no YAML document",
                expected: "a mapping with keys \(topKeys.joined(separator: ", "))",
                hint: "start from examples/netres.yaml")
        }
        let entries = try reader.mapping(root, keys: topKeys, what: "the config")
        var config = DaemonConfig(stateDirectory: DaemonConfig.defaultStateDirectory)
        let resolve = { (path: String) in path.hasPrefix("/") ? path : directory + "/" + path }
        for entry in entries {
            let value = entry.value
            switch entry.key {
            case "log-format":
                config.logFormat = try reader.name(
                    value, kind: "log format", among: DaemonConfig.LogFormat.allCases.map(\.rawValue)
                ) { DaemonConfig.LogFormat(rawValue: $0) }
            case "control-socket":
                config.controlSocket = resolve(try reader.scalar(value, expected: "a socket path"))
                guard config.controlSocket.utf8.count <= maximumSocketPath else {
                    throw reader.fail(
                        .invalidValue, at: value,
                        "control-socket \(config.controlSocket) is \(config.controlSocket.utf8.count) bytes long, "
                            + "more than a unix socket address holds",
                        expected: "a path of at most \(maximumSocketPath) bytes (after resolving it)")
                }
            case "control-group":
                let name = try reader.scalar(value, expected: "a group name")
                guard let gid = ControlAccess.groupID(named: name) else {
                    throw reader.fail(
                        .invalidValue, at: value, "control-group \"\(name)\" is not a group of this system",
                        expected: "an existing group name (getent group NAME)")
                }
                config.controlGroup = gid
            case "interfaces":
                config.interfaces = try reader.list(value, expected: "interface names or globs") {
                    (node: Node) throws(PolicyFileError) -> String in
                    try reader.scalar(node, expected: "an interface name or glob")
                }
            case "hold-down": config.holdDown = try reader.duration(value, what: "hold-down")
            case "register-rate-ceiling":
                let ceiling = try reader.number(value, in: 1...100_000, what: "register-rate-ceiling")
                guard ceiling.rounded() == ceiling else {
                    throw reader.fail(
                        .wrongType, at: value, "register-rate-ceiling must be a whole number of REGISTERs per second",
                        expected: "an integer from 1 to 100000")
                }
                config.registerRateCeiling = Int(ceiling)
            case "flow-ping-timeout":
                let timeout = try reader.duration(value, what: "flow-ping-timeout")
                guard timeout >= .seconds(1), timeout <= .seconds(10) else {
                    throw reader.fail(
                        .invalidValue, at: value, "flow-ping-timeout must be between 1s and 10s, found \(timeout)",
                        expected: "a duration from 1s to 10s like 3s (RFC 5626 §4.4.1 waits at most 10s)")
                }
                config.flowPingTimeout = timeout
            case "app-state":
                config.appState = try reader.name(
                    value, kind: "app state", among: AppState.allCases.map(\.rawValue)
                ) { AppState(rawValue: $0) }
            case "policy": config.policyPath = resolve(try reader.scalar(value, expected: "a policy file path"))
            case "hooks": config.hooks = try hooks(value, reader: reader, resolve: resolve)
            case "state-directory":
                config.stateDirectory = resolve(try reader.scalar(value, expected: "a directory path"))
            case "metrics": config.metrics = try metrics(value, reader: reader)
            default:  // accounts
                guard case .sequence(let items) = value else {
                    throw reader.fail(
                        .wrongType, at: value, "accounts must be a list, found \(reader.describe(value))",
                        expected: "a list of accounts")
                }
                // An empty list is a daemon whose services all come from external plugins.
                for item in items {
                    let account = try AccountReader(reader: reader, resolve: resolve).account(item)
                    if config.accounts.contains(where: { $0.account.name == account.account.name }) {
                        throw reader.fail(
                            .invalidValue, at: item, "account \"\(account.account.name)\" appears twice",
                            expected: "unique account names")
                    }
                    config.accounts.append(account)
                }
            }
        }
        _ = try reader.require("accounts", in: entries, of: root, what: "the config")
        return config
    }

    /// `sun_path` holds 108 bytes on Linux, the last a NUL.
    static let maximumSocketPath = 107

    static let topKeys = [
        "log-format", "control-socket", "control-group", "interfaces", "hold-down", "app-state",
        "register-rate-ceiling", "flow-ping-timeout", "policy", "hooks", "metrics", "state-directory", "accounts",
    ]

    /// Reads `metrics: { address, port }`; both optional (loopback, 9464).
    static func metrics(_ node: Node, reader: LocatedYAML) throws(PolicyFileError) -> MetricsConfig {
        let entries = try reader.mapping(node, keys: ["address", "port"], what: "metrics")
        var config = MetricsConfig()
        for entry in entries {
            let text = try reader.scalar(entry.value, expected: entry.key == "port" ? "a port" : "an IP address")
            if entry.key == "address" {
                config.address = text
            } else {
                guard let port = Int(text), (0...65535).contains(port) else {
                    throw reader.fail(
                        .invalidValue, at: entry.value, "metrics port \"\(text)\" is not a port",
                        expected: "a port number from 0 to 65535")
                }
                config.port = port
            }
        }
        return config
    }

    /// Reads `hooks: { directory, timeout }`; the directory must exist.
    static func hooks(
        _ node: Node, reader: LocatedYAML, resolve: (String) -> String
    ) throws(PolicyFileError) -> HooksConfig {
        let entries = try reader.mapping(node, keys: ["directory", "timeout"], what: "hooks")
        let directoryNode = try reader.require("directory", in: entries, of: node, what: "hooks")
        let directory = resolve(try reader.scalar(directoryNode, expected: "a directory of hook scripts"))
        guard HookRunner.isDirectory(directory) else {
            throw reader.fail(
                .unreadable, at: directoryNode, "\(directory) is not a directory",
                expected: "an existing directory of hook scripts")
        }
        var config = HooksConfig(directory: directory)
        if let timeout = entries.first(where: { $0.key == "timeout" }) {
            config.timeout = try reader.duration(timeout.value, what: "hooks timeout")
            guard config.timeout > .zero else {
                throw reader.fail(
                    .invalidValue, at: timeout.value, "hooks timeout must be positive", expected: "a duration like 10s")
            }
        }
        return config
    }
}
