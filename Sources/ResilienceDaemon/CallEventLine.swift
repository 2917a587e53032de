import ResilienceCore
import ResilienceOutput
import SIPPlugin
internal import Synchronization

/// Renders one `CallEvent` as a `netres run` log line, beside the manager's lines.
///
/// Human: `TIME call alerting alice.call.ID incoming "sip:bob@example.com" trigger=remote`, then
/// `reason=...`, `glare-retries=N`, and for a recovery (trigger `network`) or an end by the outage
/// `downtime=3.1s reinvite-rtt=40ms recovery=3.2s` when they apply. JSON: the manager lines'
/// stable keys (ts, mono_ns, kind `call`, event = the call's state, service; the others null or
/// empty) plus call, account, peer, direction, trigger, reason, glare_retries, downtime_ms,
/// reinvite_rtt_ms, recovery_ms (null when they do not apply), held_back.
///
/// `held-back=N` (JSON `held_back`, always present) counts the events of the same state that
/// ``CallEventThrottle`` kept out of the log and the hooks before this one.
///
/// Invariant: the peer and the reason come from the wire: both are escaped and cut
/// (`LogText`) before they reach a line; nothing here can hold a credential.
struct CallEventLine {
    let clock: WallClock
    let json: Bool

    func render(
        _ event: CallEvent, account: SIPAccount, heldBack: Int = 0, at: ContinuousClock.Instant = .now
    ) -> String {
        let service = account.callService(event.call).rawValue
        let peer = LogText.escaped(event.peer, limit: 120)
        let reason = event.reason.map { LogText.escaped($0, limit: 64) }
        guard json else {
            var words = [
                "call", event.phase.rawValue, service, event.direction.rawValue, "\"\(peer)\"",
                "trigger=\(LogText.escaped(event.trigger, limit: 32))",
            ]
            if let reason { words.append("reason=\(reason.contains(" ") ? "\"\(reason)\"" : reason)") }
            if event.glareRetries > 0 { words.append("glare-retries=\(event.glareRetries)") }
            if heldBack > 0 { words.append("held-back=\(heldBack)") }
            for (name, duration) in Self.durations(of: event) {
                if let duration { words.append("\(name)=\(DurationText.format(duration))") }
            }
            return clock.rfc3339(at) + " " + words.joined(separator: " ")
        }
        return JSONObject(
            [
                ("ts", .string(clock.rfc3339(at))), ("mono_ns", .int(clock.monotonicNanoseconds(at))),
                ("kind", .string("call")), ("event", .string(event.phase.rawValue)), ("epoch", .null),
                ("service", .string(service)), ("action", .null), ("attempt", .null), ("outcome", .null),
                ("error", .null), ("actions", .array([])), ("call", .string(event.call.rawValue)),
                ("account", .string(account.name)), ("peer", .string(peer)),
                ("direction", .string(event.direction.rawValue)),
                ("trigger", .string(LogText.escaped(event.trigger, limit: 32))),
                ("reason", reason.map(JSONValue.string) ?? .null), ("glare_retries", .int(Int64(event.glareRetries))),
                ("held_back", .int(Int64(heldBack))),
            ]
                + Self.durations(of: event).map { name, duration in
                    (
                        String(name.map { $0 == "-" ? "_" : $0 }) + "_ms",
                        duration.map { .int($0.nanosecondsValue / 1_000_000) } ?? .null
                    )
                }
        ).rendered
    }

    /// A recovery's measurements, in log order: downtime, reinvite-rtt, recovery.
    static func durations(of event: CallEvent) -> [(String, Duration?)] {
        [("downtime", event.downtime), ("reinvite-rtt", event.reinviteRoundTrip), ("recovery", event.recoveryTime)]
    }
}

/// Call events a peer can provoke (every forged INVITE is one `alerting` and one `ended`),
/// throttled for the log and the hooks like the wire warnings (``LogThrottle``): per call state,
/// the first ``limit`` of each ``window`` pass, the rest are held back and counted, and the next
/// event that passes carries the count. The call desk and the metrics still see every event.
///
/// Invariant: memory is one window per call state (a fixed set), whatever the traffic.
final class CallEventThrottle: Sendable {
    static let limit = 30
    static let window = Duration.seconds(10)

    private let throttle = Mutex(LogThrottle(limit: CallEventThrottle.limit, window: CallEventThrottle.window))

    /// Whether `event` goes to the log and the hooks now, and how many of its state were held back before it.
    func admit(_ event: CallEvent, at now: ContinuousClock.Instant = .now) -> LogThrottle.Verdict {
        throttle.withLock { $0.admit(event.phase.rawValue, at: now) }
    }
}
