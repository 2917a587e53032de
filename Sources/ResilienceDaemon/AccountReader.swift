internal import Foundation
import ResilienceCore
import ResiliencePolicyFile
import SIPPlugin
import Yams

/// Reads one entry of `accounts:`.
struct AccountReader {
    var reader: LocatedYAML
    var resolve: (String) -> String

    static let keys = [
        "name", "registrar", "port", "transport", "user", "domain", "auth-user", "password", "password-file",
        "expires", "outbound", "push", "subscriptions", "publish-presence", "flow-ping", "tls", "incoming-calls",
        "ringing-timeout", "binding-check",
    ]

    /// Requested lifetimes: at least a minute (a shorter one is at or near the refresh margin and
    /// would refresh without pause; RFC 3261's `Min-Expires` examples start there), at most a day.
    static let expiresRange = 60...86400

    /// The scalar at `node`, rejected with its location when `problem` finds one (the message
    /// names the key, never the value, which may be a password).
    func checked(
        _ node: Node, _ key: String, _ problem: (String) -> String?
    ) throws(PolicyFileError) -> String {
        let value = try reader.scalar(node, expected: key)
        if let reason = problem(value) {
            throw reader.fail(.invalidValue, at: node, "\(key) \(reason)", expected: "a valid SIP \(key) (RFC 3261)")
        }
        return value
    }

    func account(_ node: Node) throws(PolicyFileError) -> DaemonAccount {
        let entries = try reader.mapping(node, keys: Self.keys, what: "an account")
        func text(_ key: String, _ problem: (String) -> String? = { _ in nil }) throws(PolicyFileError) -> String {
            try checked(try reader.require(key, in: entries, of: node, what: "an account"), key, problem)
        }
        let name = try text("name")
        var account = SIPAccount(
            name: name, registrarHost: try text("registrar") { SIPGrammar.hostProblem(Self.withoutSIPS($0)) },
            user: try text("user", SIPGrammar.userProblem), domain: try text("domain", SIPGrammar.hostProblem),
            password: "")
        var push: PushConfig?
        var incomingCalls = IncomingCalls.ring
        let passwords = entries.filter { $0.key == "password" || $0.key == "password-file" }
        guard passwords.count == 1 else {
            throw reader.fail(
                .contradiction, at: passwords.last?.value ?? node,
                "account \"\(name)\" needs exactly one of password and password-file, found \(passwords.count)",
                expected: "either password: \"...\" or password-file: PATH")
        }
        for entry in entries {
            let value = entry.value
            switch entry.key {
            case "port": account.registrarPort = try integer(value, in: 1...65535, what: "port")
            case "transport":
                account.transport = try reader.name(
                    value, kind: "transport", among: SIPTransportKind.allCases.map(\.rawValue)
                ) { SIPTransportKind(rawValue: $0) }
            case "auth-user": account.authUser = try checked(value, "auth-user", SIPGrammar.authUserProblem)
            case "password": account.password = try checked(value, "password", SIPGrammar.passwordProblem)
            case "password-file": account.password = try passwordFile(value)
            case "expires": account.expires = try integer(value, in: Self.expiresRange, what: "expires")
            case "outbound":
                let fields = try reader.mapping(value, keys: ["instance-id", "reg-id", "flows"], what: "outbound")
                for field in fields {
                    switch field.key {
                    case "instance-id":
                        account.instanceID = try checked(field.value, "instance-id", SIPGrammar.instanceIDProblem)
                    case "flows": account.outboundFlows = try integer(field.value, in: 1...2, what: "flows")
                    default: account.regID = try integer(field.value, in: 1...65535, what: "reg-id")
                    }
                }
                if account.outboundFlows == 2, account.instanceID == nil || account.regID == nil {
                    throw reader.fail(
                        .contradiction, at: value, "outbound flows: 2 needs instance-id and reg-id",
                        expected: "outbound: { instance-id: urn:uuid:..., reg-id: 1, flows: 2 }")
                }
            case "push": push = try pushConfig(value)
            case "subscriptions":
                guard case .sequence(let items) = value else {
                    throw reader.fail(
                        .wrongType, at: value, "subscriptions must be a list, found \(reader.describe(value))",
                        expected: "a list of { package: NAME, resource: URI }")
                }
                for item in items { account.subscriptions.append(try subscription(item)) }
            case "publish-presence": account.publishesPresence = try bool(value, what: "publish-presence")
            case "flow-ping": account.flowPing = try flowPing(value)
            case "binding-check": account.checksBindings = try bool(value, what: "binding-check")
            case "tls": account.tls = try tlsSettings(value)
            case "incoming-calls":
                incomingCalls = try reader.name(
                    value, kind: "incoming-calls mode", among: IncomingCalls.allCases.map(\.rawValue),
                    expected: "ring, answer or reject"
                ) { IncomingCalls(rawValue: $0) }
            case "ringing-timeout":
                account.ringingTimeout = try boundedDuration(value, what: "ringing-timeout", example: "60s or 2m")
            default: break  // name, registrar, user, domain: read above
            }
        }
        try applySIPS(to: &account, entries: entries)
        return DaemonAccount(account: account, push: push, incomingCalls: incomingCalls)
    }

    /// `off`, or an interval of 1 s to 1 h (a registrar's Flow-Timer still overrides it).
    func flowPing(_ node: Node) throws(PolicyFileError) -> FlowPingSetting {
        if try reader.scalar(node, expected: "off, or a duration from 1s to 1h like 25s or 2m") == "off" { return .off }
        return .every(try boundedDuration(node, what: "flow-ping", example: "25s or 2m", offAllowed: true))
    }

    /// A duration of 1 s to 1 h (`flow-ping`, `ringing-timeout`).
    func boundedDuration(
        _ node: Node, what: String, example: String, offAllowed: Bool = false
    ) throws(PolicyFileError) -> Duration {
        let expected = (offAllowed ? "off, or a duration" : "a duration") + " from 1s to 1h like \(example)"
        let interval = try reader.duration(node, what: what)
        guard interval >= .seconds(1), interval <= .seconds(3600) else {
            throw reader.fail(
                .invalidValue, at: node, "\(what) must be between 1s and 1h, found \(interval)", expected: expected)
        }
        return interval
    }

    func integer(_ node: Node, in range: ClosedRange<Int>, what: String) throws(PolicyFileError) -> Int {
        let value = try reader.number(node, in: Double(range.lowerBound)...Double(range.upperBound), what: what)
        guard value.rounded() == value else {
            throw reader.fail(.wrongType, at: node, "\(what) must be a whole number", expected: "an integer")
        }
        return Int(value)
    }

    func bool(_ node: Node, what: String) throws(PolicyFileError) -> Bool {
        switch try reader.scalar(node, expected: "true or false") {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        case let other:
            throw reader.fail(
                .wrongType, at: node, "\(what) must be true or false, found \"\(other)\"",
                expected: "true or false")
        }
    }

    /// The first line of the file; the error never quotes the file's content.
    func passwordFile(_ node: Node) throws(PolicyFileError) -> String {
        let path = resolve(try reader.scalar(node, expected: "a password file path"))
        guard let data = FileManager.default.contents(atPath: path),
            let line = String(data: data, encoding: .utf8)?.split(whereSeparator: \.isNewline).first,
            !line.isEmpty, SIPGrammar.passwordProblem(String(line)) == nil
        else {
            throw reader.fail(
                .unreadable, at: node, "cannot read a password from \(path)",
                expected: "a readable file whose first line is the password, without control characters")
        }
        return String(line)
    }

    func pushConfig(_ node: Node) throws(PolicyFileError) -> PushConfig {
        let entries = try reader.mapping(node, keys: ["provider", "param", "token-file"], what: "push")
        let provider = try reader.scalar(
            try reader.require("provider", in: entries, of: node, what: "push"), expected: "apns or fcm")
        let file = try reader.scalar(
            try reader.require("token-file", in: entries, of: node, what: "push"), expected: "a token file path")
        let param = try entries.first { $0.key == "param" }.map { (entry) throws(PolicyFileError) -> String in
            try checked(entry.value, "push param", SIPGrammar.parameterValueProblem)
        }
        return PushConfig(provider: provider, param: param, tokenFile: resolve(file))
    }

    func subscription(_ node: Node) throws(PolicyFileError) -> SubscriptionTarget {
        let entries = try reader.mapping(node, keys: ["package", "resource", "expires"], what: "a subscription")
        let package = try reader.name(
            try reader.require("package", in: entries, of: node, what: "a subscription"), kind: "event package",
            among: EventPackage.allCases.map(\.rawValue)
        ) { EventPackage(rawValue: $0) }
        var target = SubscriptionTarget(package: package)
        for entry in entries {
            if entry.key == "resource" { target.resource = try checked(entry.value, "resource", SIPGrammar.uriProblem) }
            if entry.key == "expires" {
                target.expires = try integer(entry.value, in: Self.expiresRange, what: "expires")
            }
        }
        return target
    }
}
