/// The time source of the runtime: a `Clock` whose instants are `ContinuousClock` instants.
///
/// Production code uses `ContinuousClock` (CLOCK_BOOTTIME on Linux: it keeps counting through a
/// system suspend, so a refresh or flow ping that fell due while the machine slept fires as soon
/// as it wakes, and expiries are never computed from a clock that stood still); tests use
/// `ResilienceTesting.ManualClock`, which only moves when told to. Pinning the instant type keeps
/// deadlines, ``PlannedAction`` triggers and ``PluginContext`` deadlines comparable across both,
/// and lets the runtime hold the clock as a plain existential instead of being generic over it.
///
/// Invariant: `sleep(until:tolerance:)` returns at once when the deadline has passed, and throws
/// `CancellationError` when its task is cancelled.
public protocol RuntimeClock: Clock, Sendable
where Instant == ContinuousClock.Instant, Duration == Swift.Duration {}

extension ContinuousClock: RuntimeClock {}
