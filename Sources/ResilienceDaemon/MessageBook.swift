import ResilienceCore
import ResilienceHooks
import ResilienceOutput
import SIPPlugin

/// The MESSAGEs the accounts received, newest last, for `netres ctl messages`.
///
/// Invariant: at most ``capacity`` are kept (the oldest go first); every field was escaped and
/// cut by `InboundMessage` before it got here.
actor MessageBook {
    static let capacity = 100
    private(set) var received: [(at: String, message: InboundMessage)] = []
    private(set) var total = 0

    func record(_ message: InboundMessage, at: String) {
        received.append((at, message))
        total += 1
        if received.count > Self.capacity { received.removeFirst(received.count - Self.capacity) }
    }

    /// `TIME ACCOUNT from=… type=… "BODY"` lines, oldest first, or JSON `{"messages":[…],"total":N}`.
    func listing(json: Bool) -> String {
        guard json else {
            guard !received.isEmpty else { return "no messages" }
            return received.map { at, m in
                "\(at) \(m.account) from=\(m.from) type=\(m.contentType) \"\(m.body)\""
            }.joined(separator: "\n")
        }
        let items: [JSONValue] = received.map { at, m in
            .object(
                JSONObject([
                    ("at", .string(at)), ("account", .string(m.account)), ("from", .string(m.from)),
                    ("content_type", .string(m.contentType)), ("body", .string(m.body)), ("call_id", .string(m.callID)),
                ]))
        }
        return JSONObject([("messages", .array(items)), ("total", .int(Int64(total)))]).rendered
    }
}

extension Daemon {
    /// One MESSAGE an account received: logged (`TIME message alice from=… "BODY"`, or JSON
    /// `kind: message`), counted (`netres_messages`), handed to the hooks (`NETRES_EVENT=message`)
    /// and kept for `netres ctl messages`.
    func messageReceived(_ message: InboundMessage) async {
        let clock = WallClock()
        let at = clock.rfc3339(.now)
        await messages.record(message, at: at)
        metrics?.observeMessage()
        if config.logFormat == .json {
            await output(
                JSONObject([
                    ("ts", .string(at)), ("mono_ns", .int(clock.monotonicNanoseconds(.now))),
                    ("kind", .string("message")),
                    ("event", .string("received")), ("epoch", .null), ("service", .null), ("action", .null),
                    ("attempt", .null), ("outcome", .null), ("error", .null), ("actions", .array([])),
                    ("account", .string(message.account)), ("from", .string(message.from)),
                    ("content_type", .string(message.contentType)), ("body", .string(message.body)),
                ]).rendered)
        } else {
            await output("\(at) message \(message.account) from=\(message.from) \"\(message.body)\"")
        }
        var environment = HookEnvironment.variables(ofMessage: message.account, from: message.from, clock: clock)
        environment["NETRES_MESSAGE_BODY"] = String(message.body.prefix(200))
        hooks?.submit(environment: environment)
    }
}
