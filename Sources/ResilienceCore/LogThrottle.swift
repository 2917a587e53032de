import Synchronization

/// Rate-limits repeated warnings per kind: the first `limit` of a window are logged, the rest
/// are counted, and the next one logged after the window names how many were suppressed.
///
/// A pure value with time passed in, so tests drive it with literal instants. Invariants: per
/// kind and window at most `limit` verdicts are ``Verdict/log(suppressedBefore:)``; every
/// suppressed event is counted exactly once, in the `suppressedBefore` of the first logged event
/// of a later window (or in `pendingSuppressed`); memory grows with the number of kinds, which
/// callers draw from a fixed set of names in code, never from input.
public struct LogThrottle: Sendable {
    /// What the caller does with one event.
    public enum Verdict: Hashable, Sendable {
        /// Log it; when `suppressedBefore` > 0, first log that many were suppressed before it.
        case log(suppressedBefore: Int)
        /// Count it silently.
        case suppress
    }

    private struct Window: Sendable {
        var start: ContinuousClock.Instant
        var logged: Int
        var suppressed: Int
    }

    public let limit: Int
    public let window: Duration
    private var windows: [String: Window] = [:]

    /// - Parameters:
    ///   - limit: events logged per kind and window (at least 1).
    ///   - window: how long a window lasts (at least 1 ms).
    public init(limit: Int = 10, window: Duration = .seconds(60)) {
        self.limit = max(1, limit)
        self.window = max(.milliseconds(1), window)
    }

    /// Decides one event of `kind` at `now`.
    public mutating func admit(_ kind: String, at now: ContinuousClock.Instant) -> Verdict {
        guard var current = windows[kind], now < current.start + window else {
            let carried = windows[kind]?.suppressed ?? 0
            windows[kind] = Window(start: now, logged: 1, suppressed: 0)
            return .log(suppressedBefore: carried)
        }
        defer { windows[kind] = current }
        guard current.logged < limit else {
            current.suppressed += 1
            return .suppress
        }
        current.logged += 1
        return .log(suppressedBefore: 0)
    }

    /// Events of `kind` suppressed in its current window and not yet reported.
    public func pendingSuppressed(_ kind: String) -> Int { windows[kind]?.suppressed ?? 0 }
}

/// One process's budget of log lines that anyone outside can provoke (a peer's datagrams, a
/// local caller's pushes): a shared ``LogThrottle``, so the lines of one kind per window are
/// bounded for the whole process, however many accounts, sockets or callers produce them.
///
/// Whoever assembles the process makes one and hands it to every part that writes such lines
/// (the SIP plugin and its accounts, the daemon's push log); each kind is a fixed name from code.
/// Invariant: the ``LogThrottle`` invariants, across every holder of this object.
public final class LogBudget: Sendable {
    private let throttle: Mutex<LogThrottle>

    /// - Parameters: see ``LogThrottle/init(limit:window:)``.
    public init(limit: Int = 10, window: Duration = .seconds(60)) {
        throttle = Mutex(LogThrottle(limit: limit, window: window))
    }

    /// Decides one line of `kind` at `now` (see ``LogThrottle/admit(_:at:)``).
    public func admit(_ kind: String, at now: ContinuousClock.Instant) -> LogThrottle.Verdict {
        throttle.withLock { $0.admit(kind, at: now) }
    }

    /// Lines of `kind` held back in the current window and not yet reported.
    public func pendingSuppressed(_ kind: String) -> Int { throttle.withLock { $0.pendingSuppressed(kind) } }
}
