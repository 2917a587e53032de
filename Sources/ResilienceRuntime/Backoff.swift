import ResilienceCore
public import ResilienceRules

/// The jittered exponential backoff formula (gRPC connection backoff).
///
/// For the n-th consecutive failure (n ≥ 1) the base delay is
/// `min(initial × multiplierⁿ⁻¹, maximum)` and the delay drawn is uniform in
/// `[base × (1 − jitter), base × (1 + jitter)]`. A server's `Retry-After` is a floor under the
/// formula, never a shortcut past it, and is capped at `maximum` (see ``retryDelay(afterFailures:retryAfter:using:)``).
extension BackoffPolicy {
    /// The shortest delay the runtime ever waits before a retry, whatever the policy or a server
    /// says (`initial: 0s`, `Retry-After: 0`): a floor under every repetition.
    public static let minimumDelay: Duration = .milliseconds(100)

    /// The delay before the retry after `failures` consecutive failures (≥ 1), honouring a
    /// server's `Retry-After`.
    ///
    /// Invariants, for any `retryAfter` (negative, zero, `Int64.max` seconds):
    /// - the result is at least the jittered backoff and at least ``minimumDelay``: `Retry-After: 0`
    ///   waits the backoff, so a server answering it on every attempt still meets a growing delay;
    /// - a `Retry-After` above `maximum` counts as `maximum` (a registrar cannot park a service for
    ///   years, nor overflow an instant): the result never exceeds `maximum × (1 + jitter)`.
    public func retryDelay(
        afterFailures failures: Int, retryAfter: Duration?, using generator: inout some RandomNumberGenerator
    ) -> Duration {
        let drawn = delay(afterFailures: failures, using: &generator)
        let server = (retryAfter ?? .zero).clamped(to: .zero...maximum)
        return max(drawn, server, Self.minimumDelay)
    }

    /// The un-jittered delay after `failures` consecutive failures (`failures` ≥ 1).
    public func baseDelay(afterFailures failures: Int) -> Duration {
        let maximumSeconds = maximum.clamped(to: .zero...TimeBounds.longest).secondsValue
        let initialSeconds = min(initial.clamped(to: .zero...TimeBounds.longest).secondsValue, maximumSeconds)
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
        let base = baseDelay(afterFailures: failures).secondsValue
        return .seconds(base * (1 - jitter)) ... .seconds(base * (1 + jitter))
    }

    /// A jittered delay after `failures` consecutive failures.
    public func delay(afterFailures failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let base = baseDelay(afterFailures: failures).secondsValue
        let factor = jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter), using: &generator) : 1
        return .seconds(base * factor)
    }
}
