import Glibc

/// Notices that the machine slept: CLOCK_BOOTTIME keeps counting through a system suspend and
/// CLOCK_MONOTONIC does not, so their difference — the total time asleep since boot — grows by
/// each sleep. Pure: the caller passes the readings in.
///
/// Invariant: each sleep longer than `threshold` is reported once, by the first ``observe(asleep:)``
/// after it; shorter growth (clock noise, a blink of a suspend) is absorbed silently.
public struct SleepDetector: Sendable {
    /// Growth of the asleep total below this is not a sleep worth acting on.
    public var threshold: Duration
    private var lastAsleep: Duration

    public init(asleep: Duration, threshold: Duration = .seconds(5)) {
        self.lastAsleep = asleep
        self.threshold = threshold
    }

    /// Records a reading of the total time asleep; returns how long the machine slept since the
    /// previous reading when that is more than `threshold`, else nil.
    public mutating func observe(asleep: Duration) -> Duration? {
        let slept = asleep - lastAsleep
        guard slept > threshold else { return nil }
        lastAsleep = asleep
        return slept
    }

    /// The time this machine has spent suspended since boot (CLOCK_BOOTTIME − CLOCK_MONOTONIC).
    public static func systemTimeAsleep() -> Duration {
        var boot = timespec()
        var monotonic = timespec()
        // Monotonic first: the boot-time reading, taken later, is never behind it.
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        clock_gettime(CLOCK_BOOTTIME, &boot)
        return .seconds(boot.tv_sec - monotonic.tv_sec) + .nanoseconds(boot.tv_nsec - monotonic.tv_nsec)
    }
}
