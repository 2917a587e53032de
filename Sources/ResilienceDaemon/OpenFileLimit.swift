internal import Glibc

/// The daemon's open-file limit: each SIP account holds a socket and each control client one, so
/// systemd's default soft limit (1,024) is too low for a thousand accounts plus `ctl` clients.
public enum OpenFileLimit {
    /// Raises the soft `RLIMIT_NOFILE` to the hard one.
    /// - Returns: the soft limit in force afterwards (nil when it cannot be read).
    @discardableResult
    public static func raiseToHard() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
