import Logging
import ResilienceCore
import ResilienceHooks
import ResilienceOutput
import ResilienceRuntime
import SIPPlugin

extension Daemon {
    /// A push for an account (`netres ctl push`, its JSON command, or a push service): logged
    /// (escaped), counted (`netres_pushes` by `kind`), handed to the hooks (`NETRES_EVENT=push`)
    /// and to the manager, whose rules decide what it causes. Replies `ok push ACCOUNT KIND`.
    func handlePush(_ push: Push) async -> String {
        guard
            config.accounts.contains(where: { $0.account.name == push.account })
                || externalPlugins.carriesAccount(push.account)
        else {
            return "error: no account \"\(LogText.escaped(push.account, limit: 64))\"\n"
        }
        await output(Self.pushLine(push, clock: WallClock(), json: config.logFormat == .json))
        metrics?.observe(push: push)
        hooks?.submit(environment: HookEnvironment.variables(ofPush: push, clock: WallClock()))
        await manager.push(push)
        return "ok push \(push.account) \(push.kind.rawValue)\n"
    }

    /// One log line for a push: `TIME push call alice payload="..."`, or in JSON the manager
    /// lines' stable keys with kind `push`, event the push's kind, account and payload.
    static func pushLine(_ push: Push, clock: WallClock, json: Bool, at: ContinuousClock.Instant = .now) -> String {
        let payload = LogText.escaped(push.payload ?? "", limit: 120)
        guard json else {
            var words = ["push", push.kind.rawValue, push.account]
            if push.payload != nil { words.append("payload=\"\(payload.replacingQuotes)\"") }
            return clock.rfc3339(at) + " " + words.joined(separator: " ")
        }
        return JSONObject([
            ("ts", .string(clock.rfc3339(at))), ("mono_ns", .int(clock.monotonicNanoseconds(at))),
            ("kind", .string("push")), ("event", .string(push.kind.rawValue)), ("epoch", .null), ("service", .null),
            ("action", .null), ("attempt", .null), ("outcome", .null), ("error", .null), ("actions", .array([])),
            ("account", .string(push.account)), ("payload", push.payload == nil ? .null : .string(payload)),
        ]).rendered
    }

    /// At start: tells the manager which accounts have a push token (only those sleep while
    /// suspended) and says "push service not available" for the others (RFC 8599 needs a token;
    /// they register without pn parameters until `netres ctl push-token` brings one).
    func announcePushAvailability() async {
        for entry in config.accounts {
            let name = entry.account.name
            let available = await plugin.isPushAvailable(for: name) ?? false
            await manager.setPushAvailable(available, for: name)
            guard !available else { continue }
            logger.notice(
                "push service not available",
                metadata: [
                    "account": "\(name)",
                    "reason": "\(entry.push == nil ? "no push settings" : "no push token yet")",
                ])
        }
    }
}

extension String {
    /// Double quotes as `\"`, for a quoted word in a log line (the text is escaped already).
    fileprivate var replacingQuotes: String { replacing("\"", with: "\\\"") }
}
