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

    /// Formats a duration compactly (`0s`, `250ms`, `2s`, `1.5s`, `10m`), round-tripping with `parse`.
    public static func format(_ duration: Duration) -> String {
        let ns = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        if ns == 0 { return "0s" }
        for (unit, scale) in [("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000)]
            as [(String, Int64)]
        where ns % scale == 0 {
            return "\(ns / scale)\(unit)"
        }
        if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
        if ns % 1000 == 0 { return "\(ns / 1000)us" }
        return "\(ns)ns"
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
