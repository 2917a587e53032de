public import ResilienceCore

/// The error ``HTTPGate/perform(_:)`` throws while its gate is not open; `work` did not run.
public struct HTTPGateClosed: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where a closed gate stands.
    public enum Phase: String, Hashable, Sendable {
        /// Closed to new requests; requests that started before are still running.
        case draining
        /// Closed, nothing in flight.
        case closed
    }

    /// The HTTP service whose gate refused the request.
    public var service: ServiceID
    public var phase: Phase
    /// Why the gate closed, e.g. "closed while the app is in background".
    public var reason: String
    /// The trigger that closed it (`app.entered-background`, `shutdown`); nil if never opened.
    public var closedBy: String?
    /// When it closed, on the runtime's clock; nil if never opened.
    public var since: ContinuousClock.Instant?

    public init(
        service: ServiceID, phase: Phase, reason: String, closedBy: String? = nil,
        since: ContinuousClock.Instant? = nil
    ) {
        self.service = service
        self.phase = phase
        self.reason = reason
        self.closedBy = closedBy
        self.since = since
    }

    public var description: String {
        let when = closedBy.map { " since \($0)" } ?? ""
        return "http service \(service) refused the request: \(phase.rawValue), \(reason)\(when)"
    }
}
