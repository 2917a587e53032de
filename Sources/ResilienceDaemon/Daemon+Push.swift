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
        if case .log(let heldBack) = logBudget.admit("push", at: .now) {
            await output(Self.pushLine(push, clock: WallClock(), json: config.logFormat == .json, heldBack: heldBack))
        }
        metrics?.observe(push: push)
        hooks?.submit(environment: HookEnvironment.variables(ofPush: push, clock: WallClock()))
        await manager.push(push)
        return "ok push \(push.account) \(push.kind.rawValue)\n"
    }

    /// One log line for a push: `TIME push call alice payload="..." held-back=N`, or in JSON the
    /// manager lines' stable keys with kind `push`, event the push's kind, account, payload and
    /// `held_back`: how many push lines the process's log budget held back before this one.
    static func pushLine(
        _ push: Push, clock: WallClock, json: Bool, heldBack: Int = 0, at: ContinuousClock.Instant = .now
    ) -> String {
        let payload = LogText.escaped(push.payload ?? "", limit: 120)
        guard json else {
            var words = ["push", push.kind.rawValue, push.account]
            if push.payload != nil { words.append("payload=\"\(payload.replacingQuotes)\"") }
            if heldBack > 0 { words.append("held-back=\(heldBack)") }
            return clock.rfc3339(at) + " " + words.joined(separator: " ")
        }
        return JSONObject([
            ("ts", .string(clock.rfc3339(at))), ("mono_ns", .int(clock.monotonicNanoseconds(at))),
            ("kind", .string("push")), ("event", .string(push.kind.rawValue)), ("epoch", .null), ("service", .null),
            ("action", .null), ("attempt", .null), ("outcome", .null), ("error", .null), ("actions", .array([])),
            ("account", .string(push.account)), ("payload", push.payload == nil ? .null : .string(payload)),
            ("held_back", .int(Int64(heldBack))),
        ]).rendered
    }

    /// Whether `event`'s line is written. A push's decision and the actions decided for it are
    /// lines a local caller provokes at will: they share the process's log budget (kinds
    /// `push.decision` and `push.action.OUTCOME`), and the first written after some were held
    /// back is preceded by a `log-suppressed KIND count=N` line. Every other line is written. A
    /// line held back still reaches the metrics, the status and the hooks.
    func admitsLine(for event: ResilienceEvent) async -> Bool {
        let kind: String
        switch event {
        case .decision(.push, _, _, _): kind = "push.decision"
        case .action(let action):
            guard case .push = action.action.trigger else { return true }
            kind = "push.action.\(action.outcome.label)"
        default: return true
        }
        guard case .log(let heldBack) = logBudget.admit(kind, at: .now) else { return false }
        if heldBack > 0 { await output(Self.suppressedLine(kind, count: heldBack, json: config.logFormat == .json)) }
        return true
    }

    /// `TIME log-suppressed KIND count=N`, or in JSON the stable keys with kind `log-suppressed`,
    /// event the budget's kind, and `count`.
    static func suppressedLine(
        _ kind: String, count: Int, json: Bool, clock: WallClock = WallClock(), at: ContinuousClock.Instant = .now
    ) -> String {
        guard json else { return clock.rfc3339(at) + " log-suppressed \(kind) count=\(count)" }
        return JSONObject([
            ("ts", .string(clock.rfc3339(at))), ("mono_ns", .int(clock.monotonicNanoseconds(at))),
            ("kind", .string("log-suppressed")), ("event", .string(kind)), ("epoch", .null), ("service", .null),
            ("action", .null), ("attempt", .null), ("outcome", .null), ("error", .null), ("actions", .array([])),
            ("count", .int(Int64(count))),
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
