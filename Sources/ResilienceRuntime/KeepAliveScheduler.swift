public import ResilienceCore

/// One coalesced timer for every service's refresh deadline.
///
/// A service with an expiry is due at `expires − refreshMargin`. Invariants:
/// - At most one timer is armed, for the earliest due instant; with nothing to refresh none is
///   armed, so an idle process has zero wake-ups.
/// - Away from the foreground, wake-ups are at least `minimumBackgroundInterval` apart, and each
///   one takes every service due before the next allowed wake-up (an iOS-style keep-alive
///   handler). In the foreground a wake-up takes everything due within `coalescingWindow`.
/// - Each wake-up reports its services once, sorted, through `onDue`, and forgets their
///   deadlines: the owner re-arms a service by reporting its new expiry after the refresh.
public actor KeepAliveScheduler {
    public struct Configuration: Sendable, Hashable {
        /// Refresh this long before expiry.
        public var refreshMargin: Duration
        /// The shortest interval between wake-ups away from the foreground (iOS: 600 s).
        public var minimumBackgroundInterval: Duration
        /// In the foreground, services due this soon after the earliest are refreshed with it.
        public var coalescingWindow: Duration

        public init(
            refreshMargin: Duration = .seconds(30), minimumBackgroundInterval: Duration = .seconds(600),
            coalescingWindow: Duration = .seconds(10)
        ) {
            self.refreshMargin = refreshMargin
            self.minimumBackgroundInterval = minimumBackgroundInterval
            self.coalescingWindow = coalescingWindow
        }
    }

    private let clock: any RuntimeClock
    private let configuration: Configuration
    private let onDue: @Sendable ([ServiceID]) -> Void
    private var dueAt: [ServiceID: ContinuousClock.Instant] = [:]
    private var inForeground = true
    private var lastWakeUp: ContinuousClock.Instant?
    private var armed: (at: ContinuousClock.Instant, task: Task<Void, Never>)?
    private var stopped = false

    /// Timer fires so far (each one a process wake-up).
    public private(set) var wakeUps = 0

    /// - Parameter onDue: called on the scheduler with each batch of due services.
    public init(
        clock: any RuntimeClock = ContinuousClock(), configuration: Configuration = Configuration(),
        onDue: @escaping @Sendable ([ServiceID]) -> Void
    ) {
        self.clock = clock
        self.configuration = configuration
        self.onDue = onDue
    }

    /// The instant the armed timer fires, if one is armed.
    public var nextWakeUp: ContinuousClock.Instant? { armed?.at }

    /// Sets (or with nil clears) when a service's registration or subscription expires.
    public func setExpiry(_ expires: ContinuousClock.Instant?, for service: ServiceID) {
        dueAt[service] = expires.map { $0 - configuration.refreshMargin }
        rearm()
    }

    /// Forgets a service.
    public func remove(_ service: ServiceID) {
        guard dueAt.removeValue(forKey: service) != nil else { return }
        rearm()
    }

    /// Foreground or not decides whether the minimum background interval applies.
    public func setAppState(_ state: AppState) {
        inForeground = state == .foreground
        rearm()
    }

    /// Disarms the timer for good.
    public func stop() {
        stopped = true
        armed?.task.cancel()
        armed = nil
    }

    private func nextInstant() -> ContinuousClock.Instant? {
        guard !stopped, var next = dueAt.values.min() else { return nil }
        if !inForeground, let last = lastWakeUp {
            next = max(next, last + configuration.minimumBackgroundInterval)
        }
        return next
    }

    private func rearm() {
        let next = nextInstant()
        guard next != armed?.at else { return }
        armed?.task.cancel()
        guard let next else {
            armed = nil
            return
        }
        let task = Task { [clock] in
            guard (try? await clock.sleep(until: next, tolerance: nil)) != nil else { return }
            self.fire(scheduledAt: next)
        }
        armed = (next, task)
    }

    private func fire(scheduledAt instant: ContinuousClock.Instant) {
        guard armed?.at == instant else { return }
        armed = nil
        wakeUps += 1
        let now = clock.now
        lastWakeUp = now
        let window = inForeground ? configuration.coalescingWindow : configuration.minimumBackgroundInterval
        let horizon = now + window
        let due = dueAt.filter { $0.value <= horizon }.keys.sorted()
        for id in due { dueAt.removeValue(forKey: id) }
        rearm()
        if !due.isEmpty { onDue(due) }
    }
}
