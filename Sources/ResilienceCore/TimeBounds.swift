/// Time arithmetic on values that came from outside the process: a server's `Retry-After`,
/// `Expires` or `Flow-Timer`, a config or policy value, a plugin's report.
///
/// Invariant: every instant computed through these helpers lies within ``longest`` of the instant
/// it started from, so no later `Instant + Duration`, `sleep(until:)` or conversion to a
/// `timespec` can overflow or trap, whatever the outside value was (`Int64.max` seconds, a
/// negative count). Callers that must say when a value was cut use ``Clamped``.
public enum TimeBounds {
    /// The longest span the runtime computes with: ten years. Longer outside values are cut to it.
    public static let longest: Duration = .seconds(10 * 365 * 86_400)

    /// A value brought into a range, and whether it had to be moved.
    public struct Clamped: Hashable, Sendable {
        /// The value within the range.
        public var value: Duration
        /// True when the original lay outside the range.
        public var wasClamped: Bool

        public init(_ original: Duration, into range: ClosedRange<Duration>) {
            value = min(max(original, range.lowerBound), range.upperBound)
            wasClamped = value != original
        }
    }
}

extension Duration {
    /// Whole seconds read from the wire or a file, clamped into `0 ... TimeBounds.longest`:
    /// negative counts are zero, huge ones the longest span. Never traps.
    public static func clampedSeconds(_ seconds: some BinaryInteger) -> Duration {
        let limit = TimeBounds.longest.components.seconds
        guard seconds > 0 else { return .zero }
        guard let exact = Int64(exactly: seconds), exact < limit else { return TimeBounds.longest }
        return .seconds(exact)
    }

    /// This duration moved into `range` (bounds included).
    public func clamped(to range: ClosedRange<Duration>) -> Duration {
        min(max(self, range.lowerBound), range.upperBound)
    }
}

extension ContinuousClock.Instant {
    /// `self + duration`, with `duration` first clamped into `±TimeBounds.longest`: the result can
    /// always be slept until and compared, however large the outside value was.
    public func adding(clamped duration: Duration) -> Self {
        self + duration.clamped(to: .zero - TimeBounds.longest...TimeBounds.longest)
    }

    /// This instant, moved to within `TimeBounds.longest` of `reference` (an expiry reported far
    /// in the past or future is treated as that far and no farther).
    public func clamped(around reference: Self) -> Self {
        min(max(self, reference - TimeBounds.longest), reference + TimeBounds.longest)
    }
}
