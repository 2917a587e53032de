internal import Logging
internal import ResilienceCore

/// Lines a peer can provoke at will (malformed datagrams, stray responses, a forged INVITE's
/// bad offer or unanswered ringing, a MESSAGE, a lost flow, a refused DNS target), rate-limited
/// per kind by the process's ``ResilienceCore/LogBudget``: the first lines of each kind per
/// window are logged, whichever account or socket writes them, then one `sip.log-suppressed`
/// line with the count of held-back lines precedes the next one logged.
///
/// Callers pass values from the wire through ``ResilienceCore/LogText/escaped(_:limit:)``;
/// the kind is a fixed name from code. Invariant: every holder of one budget shares its bound.
final class ThrottledLog: Sendable {
    static let limit = 10
    static let window = Duration.seconds(60)

    let logger: Logger
    let budget: LogBudget
    private let clock: any RuntimeClock

    /// - Parameter budget: the process's (``SIPPlugin`` hands its own to every account); a new
    ///   one bounds this log alone.
    init(logger: Logger, clock: any RuntimeClock, budget: LogBudget = ThrottledLog.newBudget()) {
        self.logger = logger
        self.clock = clock
        self.budget = budget
    }

    /// A budget of ``limit`` lines per kind and ``window``.
    static func newBudget() -> LogBudget { LogBudget(limit: limit, window: window) }

    /// The same budget, with `logger` (another account's metadata) and `clock`.
    func sharing(logger: Logger, clock: any RuntimeClock) -> ThrottledLog {
        ThrottledLog(logger: logger, clock: clock, budget: budget)
    }

    func log(_ level: Logger.Level, _ kind: String, metadata: @autoclosure () -> Logger.Metadata) {
        guard case .log(let suppressed) = budget.admit(kind, at: clock.now) else { return }
        if suppressed > 0 {
            logger.log(level: level, "sip.log-suppressed", metadata: ["kind": "\(kind)", "count": "\(suppressed)"])
        }
        logger.log(level: level, "\(kind)", metadata: metadata())
    }
}
