/// Durations as people write them in flags and files: `0`, `250ms`, `2s`, `1.5s`, `10m`, `1h`,
/// and combinations such as `1m30s`. A bare number means seconds.
public enum DurationText {
    /// Parses `text`; nil when it is not a duration (negative values are not durations).
    public static func parse(_ text: String) -> Duration? {
        let s = text.trimmingWhitespace()
        guard !s.isEmpty else { return nil }
        if let seconds = Double(s), seconds >= 0, seconds.isFinite {
            return .milliseconds(Int64((seconds * 1000).rounded()))
        }
        var total = Duration.zero
        var rest = Substring(s)
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard let value = Double(number), value >= 0 else { return nil }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter || $0 == "µ" }
            rest = rest.dropFirst(unit.count)
            guard let scale = unitNanoseconds[String(unit)], value * scale < limitSeconds * 1e9 else { return nil }
            total += .nanoseconds(Int64((value * scale).rounded()))
            guard total < .seconds(limitSeconds) else { return nil }
        }
        return total
    }

    /// Formats a duration as a policy file writes it: `0s`, `250ms`, `2s`, `1.5s`, `10m`, `1m30s`,
    /// `1h2m3.25s`. Whole minutes and hours are split off; seconds keep at most three decimals
    /// (a measured downtime of 1505709508 ns prints `1.506s`), sub-second values are written in
    /// `ms`, `us` or `ns`. `parse` reads every result back, exactly when the duration has no
    /// finer precision than the one printed.
    public static func format(_ duration: Duration) -> String {
        let ns = duration.nanosecondsValue
        if ns == 0 { return "0s" }
        if ns < 0 { return "-" + format(.nanoseconds(ns == .min ? .max : -ns)) }
        if ns < 999_500_000 {
            if ns % 1_000_000 == 0 || ns >= 10_000_000 { return "\((ns + 500_000) / 1_000_000)ms" }
            if ns >= 1_000_000 { return decimal((ns + 500) / 1000, scale: 1000, digits: 3) + "ms" }
            return ns % 1000 == 0 ? "\(ns / 1000)us" : "\(ns)ns"
        }
        let milliseconds = ns / 1_000_000 + (ns % 1_000_000 >= 500_000 ? 1 : 0)  // no overflow at .max
        let (hours, afterHours) = milliseconds.quotientAndRemainder(dividingBy: 3_600_000)
        let (minutes, rest) = afterHours.quotientAndRemainder(dividingBy: 60_000)
        var text = ""
        if hours > 0 { text += "\(hours)h" }
        if minutes > 0 { text += "\(minutes)m" }
        if rest > 0 || text.isEmpty { text += decimal(rest, scale: 1000, digits: 3) + "s" }
        return text
    }

    /// `value / scale` with at most `digits` decimals, trailing zeros dropped.
    private static func decimal(_ value: Int64, scale: Int64, digits: Int) -> String {
        let (whole, fraction) = value.quotientAndRemainder(dividingBy: scale)
        guard fraction != 0 else { return "\(whole)" }
        var decimals = String(fraction)
        decimals = String(repeating: "0", count: max(0, digits - decimals.count)) + decimals
        while decimals.last == "0" { decimals.removeLast() }
        return "\(whole).\(decimals)"
    }

    /// Larger values are refused rather than overflowing (about 285 years).
    private static let limitSeconds = 9e9

    private static let unitNanoseconds: [String: Double] = [
        "ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "min": 60e9, "h": 3600e9,
    ]
}

extension Duration {
    /// Whole nanoseconds (saturating), for logs and JSON.
    public var nanosecondsValue: Int64 {
        let (s, a) = components
        let (scaled, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (s < 0 ? .min : .max) : scaled + a / 1_000_000_000
    }

    /// Seconds as a floating-point number.
    public var secondsValue: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
