public import ResilienceRules

/// The jittered exponential backoff formula (gRPC connection backoff).
///
/// For the n-th consecutive failure (n ≥ 1) the base delay is
/// `min(initial × multiplierⁿ⁻¹, maximum)` and the delay drawn is uniform in
/// `[base × (1 − jitter), base × (1 + jitter)]`. A server's `Retry-After` replaces the formula.
extension BackoffPolicy {
    /// The un-jittered delay after `failures` consecutive failures (`failures` ≥ 1).
    public func baseDelay(afterFailures failures: Int) -> Duration {
        let initialSeconds = initial.seconds
        let maximumSeconds = maximum.seconds
        var seconds = initialSeconds
        var n = 1
        while n < failures, seconds < maximumSeconds {
            seconds *= multiplier
            n += 1
        }
        return .seconds(min(seconds, maximumSeconds))
    }

    /// The bounds the jittered delay stays within after `failures` consecutive failures.
    public func delayBounds(afterFailures failures: Int) -> ClosedRange<Duration> {
        let base = baseDelay(afterFailures: failures).seconds
        return .seconds(base * (1 - jitter)) ... .seconds(base * (1 + jitter))
    }

    /// A jittered delay after `failures` consecutive failures.
    public func delay(afterFailures failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let base = baseDelay(afterFailures: failures).seconds
        let factor = jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter), using: &generator) : 1
        return .seconds(base * factor)
    }
}

extension Duration {
    /// The duration in seconds as a `Double`.
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
