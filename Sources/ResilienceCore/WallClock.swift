internal import Glibc

/// Maps the library's `ContinuousClock` instants to wall-clock RFC 3339 timestamps and to
/// CLOCK_MONOTONIC nanoseconds, for log lines.
///
/// The mapping is taken once, at creation: timestamps stay consistent with each other even if
/// the wall clock is stepped later (which is what a log of intervals needs).
public struct WallClock: Sendable {
    private let referenceInstant: ContinuousClock.Instant
    private let referenceWallNanoseconds: Int64
    private let referenceMonotonicNanoseconds: Int64

    public init() {
        referenceInstant = .now
        referenceWallNanoseconds = Self.read(CLOCK_REALTIME)
        referenceMonotonicNanoseconds = Self.read(CLOCK_MONOTONIC)
    }

    /// CLOCK_MONOTONIC nanoseconds at `instant`.
    public func monotonicNanoseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        referenceMonotonicNanoseconds + offset(instant)
    }

    /// RFC 3339 UTC timestamp with microseconds, e.g. `2026-11-21T23:59:01.123456Z`.
    public func rfc3339(_ instant: ContinuousClock.Instant) -> String {
        let wall = referenceWallNanoseconds + offset(instant)
        var seconds = time_t(wall / 1_000_000_000)
        let micros = Int((wall % 1_000_000_000) / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int = 2) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let micro = String(micros)
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))"
            + "T\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec))."
            + String(repeating: "0", count: 6 - micro.count) + micro + "Z"
    }

    private func offset(_ instant: ContinuousClock.Instant) -> Int64 {
        referenceInstant.duration(to: instant).nanosecondsValue
    }

    private static func read(_ clock: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
