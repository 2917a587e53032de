internal import ResilienceCore
internal import Synchronization

/// Tells the runtime that an account's flow carried a response, so its flow ping waits a whole
/// interval again (RFC 5626 §4.4.1: a ping only has to prove a flow nothing else proved).
///
/// Called on the flow's I/O thread for every response that matched one of the agent's client
/// transactions (a stray one proves nothing), whether an action planned the request or not (a
/// call's re-INVITE, a subscription's refresh). Invariant: it reports at most once per
/// ``minimumGap`` per account, so a burst of answers costs one report; the ping it re-arms is
/// then early by less than the gap, far under any flow-ping interval.
final class FlowActivity: Sendable {
    /// The shortest time between two reports of one account.
    static let minimumGap: Duration = .seconds(1)

    private let lastReport = Mutex<ContinuousClock.Instant?>(nil)
    private let services: [ServiceID]
    private let report: @Sendable ([ServiceID]) -> Void

    /// - Parameters:
    ///   - services: the services whose flow pings the response proves (the registration's).
    ///   - report: hands them to the plugin's report stream.
    init(services: [ServiceID], report: @escaping @Sendable ([ServiceID]) -> Void) {
        self.services = services
        self.report = report
    }

    /// A response arrived at `now`.
    func responseArrived(at now: ContinuousClock.Instant) {
        let due = lastReport.withLock { last in
            if let last, now - last < Self.minimumGap, now >= last { return false }
            last = now
            return true
        }
        if due { report(services) }
    }
}
