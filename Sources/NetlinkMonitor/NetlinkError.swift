public import ResilienceCore

/// Everything that can go wrong in the monitor, following swift-system's `Errno`: a code plus the
/// library's own words (`nl_geterror` for libnl codes, `strerror` for errno).
public struct NetlinkError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: Hashable, Sendable {
        /// A libnl `NLE_*` code (positive).
        case library(Int32)
        /// An errno from a plain syscall (setns, eventfd, poll, setsockopt).
        case system(Int32)
        /// `waitUntilSatisfied` ran out of time; the payload is why the path is not satisfied.
        case timedOut(LossReason)
        case shutDown
        case notStarted
        case alreadyStarted
    }

    let code: Code
    /// Human-readable explanation, including what was being done.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The `NLE_*` code when libnl reported the failure.
    public var libnlCode: Int32? {
        if case .library(let code) = code { return code }
        return nil
    }

    /// The errno when a syscall failed.
    public var errno: Int32? {
        if case .system(let code) = code { return code }
        return nil
    }

    /// For a timed-out wait: why the path was still not satisfied.
    public var timeoutReason: LossReason? {
        if case .timedOut(let reason) = code { return reason }
        return nil
    }

    /// The monitor was shut down while the call waited, or before it was made.
    public var isShutDown: Bool { code == .shutDown }

    static func timedOut(after timeout: Duration, reason: LossReason) -> NetlinkError {
        NetlinkError(
            .timedOut(reason), "network path not satisfied after \(DurationText.format(timeout)): \(reason.rawValue)")
    }

    static let shutDown = NetlinkError(.shutDown, "the netlink monitor was shut down")
    static let notStarted = NetlinkError(.notStarted, "the netlink monitor has not been started")
    static let alreadyStarted = NetlinkError(.alreadyStarted, "the netlink monitor was already started")
}
