internal import Foundation
public import ResilienceCore

/// One message a client sends on a control-socket session (the external plugin protocol,
/// version ``protocolVersion``; the DocC article "External plugins" is its specification).
///
/// Invariants: everything parsed is bounded and checked before it reaches the daemon: a name
/// or service id is 1–128 printable characters without spaces, a plugin declares at most
/// ``maxServices`` services and ``maxActions`` actions, a reason is clipped to 200 escaped
/// characters, numbers are clamped. A message that breaks a rule is refused with an error that
/// names the field.
public enum ExternalPluginMessage: Hashable, Sendable {
    /// The first message of a session.
    case hello(Hello)
    /// The outcome of the perform message `id`.
    case outcome(id: UInt64, ExternalOutcome)
    /// A service appeared, changed (a call's state) or ended.
    case serviceAdded(ClientService)
    case serviceChanged(ClientService)
    case serviceRemoved(ServiceID)
    /// The flows under these services failed between actions.
    case flowLost([ServiceID])
    /// A push notification arrived for an account (RFC 8599).
    case push(Push)
    /// Any one-line control command (`status --json`); answered by a `reply` message.
    case command(String)

    /// The protocol version this daemon speaks.
    public static let protocolVersion = 1
    public static let maxServices = 256
    public static let maxActions = 64

    /// What a client says it is in its first message.
    public struct Hello: Hashable, Sendable {
        /// The plugin's name; nil for a client that only listens to events or pushes.
        public var plugin: String?
        public var services: [ClientService]
        public var actions: Set<ActionKind>
        /// Whether the client wants the event stream.
        public var events: Bool
    }

    /// Whether `line` is a hello message (it opens a session), valid or not.
    public static func isHello(_ line: String) -> Bool {
        guard line.utf8.first == UInt8(ascii: "{"),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { return false }
        return object["type"] as? String == "hello"
    }

    /// Parses one line.
    /// - Throws: ``DaemonError`` naming the field at fault.
    public static func parse(_ line: String) throws(DaemonError) -> ExternalPluginMessage {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw DaemonError("not a JSON object")
        }
        let fields = Fields(object)
        switch try fields.string("type") {
        case "hello": return .hello(try hello(fields))
        case "outcome": return try outcome(fields)
        case "service-added": return .serviceAdded(try service(fields.object("service")))
        case "service-changed": return .serviceChanged(try service(fields.object("service")))
        case "service-removed": return .serviceRemoved(try ServiceID(fields.name("service")))
        case "flow-lost": return .flowLost(try fields.names("services", limit: maxServices).map { ServiceID($0) })
        case "push":
            let kind = try fields.optionalString("kind") ?? "call"
            guard let pushKind = PushKind(rawValue: kind) else {
                throw DaemonError("kind: expected call, message or refresh")
            }
            do {
                return .push(
                    try Push(account: fields.name("account"), kind: pushKind, payload: fields.optionalString("payload"))
                )
            } catch let problem as PushProblem {
                throw DaemonError("push: \(problem)")
            } catch {
                throw DaemonError("\(error)")
            }
        case "command": return .command(try fields.string("line"))
        case let other: throw DaemonError("type: unknown message type \"\(LogText.escaped(other, limit: 32))\"")
        }
    }

    private static func hello(_ fields: Fields) throws(DaemonError) -> Hello {
        let version = try fields.int("protocol")
        guard version == protocolVersion else {
            throw DaemonError("protocol: this daemon speaks version \(protocolVersion), not \(version)")
        }
        let plugin = try fields.optionalName("plugin")
        let services = try fields.objects("services", limit: maxServices).map { (item) throws(DaemonError) in
            try service(item)
        }
        guard Set(services.map(\.id)).count == services.count else { throw DaemonError("services: an id twice") }
        let actions = try fields.names("actions", limit: maxActions).map(ActionKind.init(rawValue:))
        guard plugin != nil || (services.isEmpty && actions.isEmpty) else {
            throw DaemonError("plugin: a client that declares services or actions needs a plugin name")
        }
        return Hello(
            plugin: plugin, services: services, actions: Set(actions),
            events: try fields.optionalBool("events") ?? false)
    }

    private static func outcome(_ fields: Fields) throws(DaemonError) -> ExternalPluginMessage {
        let id = try fields.int("id")
        guard id >= 0 else { throw DaemonError("id: not a perform id") }
        switch try fields.string("result") {
        case "succeeded": return .outcome(id: UInt64(id), .succeeded)
        case "skipped": return .outcome(id: UInt64(id), .skipped)
        case "failed":
            let reason = LogText.escaped(try fields.optionalString("reason") ?? "failed", limit: 200)
            let retryable = try fields.optionalBool("retryable") ?? true
            let retryAfter = try fields.optionalDouble("retry_after").map {
                Duration.milliseconds(Int64(min(max($0, 0), 86_400) * 1000))
            }
            return .outcome(
                id: UInt64(id), .failed(PluginError(reason, isRetryable: retryable, retryAfter: retryAfter)))
        case let other:
            throw DaemonError(
                "result: expected succeeded, failed or skipped, not \"\(LogText.escaped(other, limit: 32))\"")
        }
    }

    /// `{"id":"alice.registration","kind":"registration","account":"alice"}`; a call adds
    /// `direction` and `state`, a subscription `package`.
    static func service(_ fields: Fields) throws(DaemonError) -> ClientService {
        let id = ServiceID(try fields.name("id"))
        let account = try fields.optionalName("account")
        let kind: ServiceKind
        switch try fields.string("kind") {
        case "registration": kind = .registration
        case "presence-publish": kind = .presencePublish
        case "http": kind = .http
        case "subscription":
            guard let package = EventPackage(rawValue: try fields.string("package")) else {
                throw DaemonError("package: not an event package of the policy")
            }
            kind = .subscription(package)
        case "call":
            guard let direction = CallDirection(rawValue: try fields.string("direction")) else {
                throw DaemonError("direction: expected outgoing or incoming")
            }
            guard let state = CallState(rawValue: try fields.string("state")) else {
                throw DaemonError("state: expected progressing, alerting, active, held or remotely-held")
            }
            kind = .call(direction, state)
        case let other:
            throw DaemonError("kind: unknown service kind \"\(LogText.escaped(other, limit: 32))\"")
        }
        return ClientService(id: id, kind: kind, account: account)
    }
}

/// What an external plugin reports for one perform message.
public enum ExternalOutcome: Hashable, Sendable {
    case succeeded
    /// Nothing to do: counts as done, the service's next action starts.
    case skipped
    case failed(PluginError)
}
