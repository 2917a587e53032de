internal import Logging
internal import ResilienceCore
internal import Synchronization

/// Lines a peer can provoke at will (malformed datagrams, stray responses, a forged INVITE's
/// bad offer or unanswered ringing, a MESSAGE), rate-limited per kind with ``ResilienceCore/LogThrottle``: the first ``limit`` of each kind per ``window`` are
/// logged, then one `sip.log-suppressed` line with the count precedes the next one logged.
///
/// Callers pass values from the wire through ``ResilienceCore/LogText/escaped(_:limit:)``;
/// the kind is a fixed name from code.
final class ThrottledLog: Sendable {
    static let limit = 10
    static let window = Duration.seconds(60)

    let logger: Logger
    private let clock: any RuntimeClock
    private let throttle = Mutex(LogThrottle(limit: ThrottledLog.limit, window: ThrottledLog.window))

    init(logger: Logger, clock: any RuntimeClock) {
        self.logger = logger
        self.clock = clock
    }

    func log(_ level: Logger.Level, _ kind: String, metadata: @autoclosure () -> Logger.Metadata) {
        let now = clock.now
        let verdict = throttle.withLock { $0.admit(kind, at: now) }
        guard case .log(let suppressed) = verdict else { return }
        if suppressed > 0 {
            logger.log(level: level, "sip.log-suppressed", metadata: ["kind": "\(kind)", "count": "\(suppressed)"])
        }
        logger.log(level: level, "\(kind)", metadata: metadata())
    }
}
