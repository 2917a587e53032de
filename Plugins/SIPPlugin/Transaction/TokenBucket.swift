internal import ResilienceCore

/// A token bucket: `tokens` as of `updated`. The one rate limiter of the plugin's doors
/// (``InboundAdmission`` for requests through the registrar, ``ContactAdmission`` for requests
/// at the Contact).
///
/// A pure value with time passed in. Invariants: `tokens` never exceeds the `burst` it is taken
/// with; time running backwards adds nothing (`updated` never moves back).
struct TokenBucket: Hashable, Sendable {
    var tokens: Double
    var updated: ContinuousClock.Instant

    /// Takes one token at `now` (refilling at `rate` up to `burst`); nil when taken, else how
    /// long until one is there.
    mutating func take(at now: ContinuousClock.Instant, rate: Double, burst: Double) -> Duration? {
        let elapsed = max(0, Double((now - updated).nanosecondsValue) / 1e9)
        tokens = min(burst, tokens + elapsed * rate)
        updated = max(updated, now)
        guard tokens < 1 else {
            tokens -= 1
            return nil
        }
        return .nanoseconds(Int64((1 - tokens) / rate * 1e9))
    }
}
