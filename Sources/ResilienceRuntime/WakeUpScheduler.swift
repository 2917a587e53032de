public import ResilienceCore

/// One coalesced timer with two duties: every service's refresh deadline and flow-ping deadline.
///
/// A service with an expiry is due for refresh at `expires − refreshMargin`. A service with a
/// flow-ping interval is due for a ping at a random 80–100 % of the interval after it was armed
/// (RFC 5626 §4.4.1), drawn from the seeded generator. Invariants:
/// - A floor under every repetition, whatever a server granted (0, −1, 5 s, far below the
///   margin): a refresh is never due sooner than half the lifetime granted when its expiry was
///   set, nor sooner than `minimumRefreshInterval` after the service's previous refresh; a ping
///   interval is never shorter than `minimumPingInterval`. Expiries and intervals are clamped
///   with `TimeBounds` first, so a huge one cannot overflow an instant.
/// - At most one timer is armed, for the earliest refresh or ping instant; with nothing to refresh
///   or ping none is armed, so an idle process has zero wake-ups.
/// - Away from the foreground, wake-ups are at least `minimumBackgroundInterval` apart, and each
///   one takes every refresh and ping due before the next allowed wake-up (an iOS-style background
///   handler). In the foreground a wake-up takes everything due within `coalescingWindow`.
/// - Away from the foreground, no ping is due before `minimumBackgroundInterval` has passed since
///   the app left the foreground (or since the scheduler started there): starting in the
///   background never sends a ping at the foreground interval. Refreshes keep their own deadlines.
/// - ``flowActive(_:)`` (a response on the service's flow) re-arms its next ping from then: a
///   flow that just carried a successful REGISTER is not pinged at its old deadline.
/// - Each wake-up reports its refreshes and its pings once, each sorted, through `onDue` (never
///   both empty). It forgets the refresh deadlines (the owner re-arms a service by reporting its
///   new expiry after the refresh) and re-arms each pinged service's next ping from the wake-up.
/// - A service refreshed in a wake-up is not pinged in it (the refresh is traffic on its flow);
///   its next ping is re-armed from the wake-up like a ping's.
/// - A nil interval or ``remove(_:)`` clears a service's ping.
/// - A service ``setAsleep(_:)`` lists arms nothing (RFC 8599: the registrar pushes instead): its
///   refresh instant is parked and its ping dropped until it wakes, when the refresh is armed
///   again (at once if it fell due meanwhile) and the ping re-drawn from then. With every service
///   asleep no timer is armed. ``setAsleep(refreshes:pings:)`` puts each duty to sleep alone.
/// - The owner decides who sleeps; the manager's rule (`ResilienceManager+Push.swift`): while
///   suspended, a refresh or ping sleeps when the rules would decide nothing for its wake-up in
///   that state, so the process is never woken for nothing.
public actor WakeUpScheduler {
    public struct Configuration: Sendable, Hashable {
        /// Refresh this long before expiry.
        public var refreshMargin: Duration
        /// The shortest interval between wake-ups away from the foreground (iOS: 600 s).
        public var minimumBackgroundInterval: Duration
        /// In the foreground, services due this soon after the earliest are refreshed with it.
        public var coalescingWindow: Duration
        /// Seed for the ping jitter (reproducible tests); nil for the system generator.
        public var randomSeed: UInt64?
        /// No service is refreshed again sooner than this after its previous refresh.
        public var minimumRefreshInterval: Duration
        /// Shorter flow-ping intervals (a registrar's `Flow-Timer: 0`) are raised to this.
        public var minimumPingInterval: Duration

        public init(
            refreshMargin: Duration = .seconds(30), minimumBackgroundInterval: Duration = .seconds(600),
            coalescingWindow: Duration = .seconds(10), randomSeed: UInt64? = nil,
            minimumRefreshInterval: Duration = .seconds(10), minimumPingInterval: Duration = .seconds(1)
        ) {
            self.refreshMargin = refreshMargin
            self.minimumBackgroundInterval = minimumBackgroundInterval
            self.coalescingWindow = coalescingWindow
            self.randomSeed = randomSeed
            self.minimumRefreshInterval = minimumRefreshInterval
            self.minimumPingInterval = minimumPingInterval
        }
    }

    private let clock: any RuntimeClock
    private let configuration: Configuration
    private let onDue: @Sendable (_ refresh: [ServiceID], _ ping: [ServiceID]) -> Void
    /// Refresh instants, earliest first (a heap: re-arming one of 1,000 costs O(log n)).
    private var dueAt = DeadlineQueue<ServiceID>()
    private var intervals: [ServiceID: Duration] = [:]
    private var pingAt = DeadlineQueue<ServiceID>()
    private var lastRefresh: [ServiceID: ContinuousClock.Instant] = [:]
    private var random: SplitMix64
    private var lastWakeUp: ContinuousClock.Instant?
    /// When the app last left the foreground; nil in the foreground.
    private var backgroundSince: ContinuousClock.Instant?
    /// Foreground exactly when no background period is running.
    private var inForeground: Bool { backgroundSince == nil }
    private var timer = DeadlineTimer()
    private var stopped = false
    /// Services whose refresh sleeps, each with its parked refresh instant (see
    /// ``setAsleep(refreshes:pings:)``).
    private var refreshesAsleep: [ServiceID: Parked] = [:]
    /// Services whose ping sleeps (none is armed for them).
    private var pingsAsleep: Set<ServiceID> = []

    private struct Parked {
        var refresh: ContinuousClock.Instant?
    }

    /// Timer fires so far (each one a process wake-up).
    public private(set) var wakeUps = 0

    /// - Parameters:
    ///   - clock: the wake-ups run on it.
    ///   - appState: the app state the wake-ups start in (see ``setAppState(_:)``).
    ///   - configuration: refresh margin, background minimum, coalescing window, jitter seed.
    ///   - onDue: called on the scheduler with each wake-up's services due for refresh and for a
    ///     ping.
    public init(
        clock: any RuntimeClock = ContinuousClock(), appState: AppState = .foreground,
        configuration: Configuration = Configuration(),
        onDue: @escaping @Sendable (_ refresh: [ServiceID], _ ping: [ServiceID]) -> Void
    ) {
        self.clock = clock
        self.backgroundSince = appState == .foreground ? nil : clock.now
        self.configuration = configuration
        self.onDue = onDue
        var seeder = SystemRandomNumberGenerator()
        self.random = SplitMix64(seed: configuration.randomSeed ?? seeder.next())
    }

    /// The instant the armed timer fires, if one is armed.
    public var nextWakeUp: ContinuousClock.Instant? { timer.deadline }

    /// Sets (or with nil clears) when a service's registration or subscription expires; the
    /// lifetime counts from now (the grant was just reported).
    public func setExpiry(_ expires: ContinuousClock.Instant?, for service: ServiceID) {
        let due = expires.map { refreshInstant(of: service, expiring: $0, grantedAt: clock.now) }
        if refreshesAsleep[service] != nil {
            refreshesAsleep[service] = Parked(refresh: due)
            return
        }
        dueAt[service] = due
        rearm()
    }

    /// Puts exactly `services` to sleep (their refreshes and pings are not armed) and wakes every
    /// other sleeping service: its parked refresh is armed again and its next ping drawn from now.
    public func setAsleep(_ services: Set<ServiceID>) {
        setAsleep(refreshes: services, pings: services)
    }

    /// Puts exactly the refreshes of `refreshes` and the pings of `pings` to sleep and wakes every
    /// other sleeping one: a woken refresh is armed at its parked instant (at once if that passed),
    /// a woken ping is drawn from now.
    public func setAsleep(refreshes: Set<ServiceID>, pings: Set<ServiceID>) {
        let now = clock.now
        for (service, parked) in refreshesAsleep where !refreshes.contains(service) {
            refreshesAsleep[service] = nil
            dueAt[service] = parked.refresh
        }
        for service in refreshes where refreshesAsleep[service] == nil {
            refreshesAsleep[service] = Parked(refresh: dueAt[service])
            dueAt[service] = nil
        }
        for service in pingsAsleep.subtracting(pings).sorted() {
            pingAt[service] = intervals[service].map { now + jittered($0) }
        }
        for service in pings.subtracting(pingsAsleep) { pingAt[service] = nil }
        pingsAsleep = pings
        rearm()
    }

    /// The services whose refresh and ping both sleep now (see ``setAsleep(_:)``).
    public var sleepingServices: Set<ServiceID> { Set(refreshesAsleep.keys).intersection(pingsAsleep) }

    /// The services whose ping sleeps now (see ``setAsleep(refreshes:pings:)``).
    public var sleepingPings: Set<ServiceID> { pingsAsleep }

    /// `expires − refreshMargin`, but never before half the granted lifetime has passed nor
    /// sooner than `minimumRefreshInterval` after the service's previous refresh.
    private func refreshInstant(
        of service: ServiceID, expiring expires: ContinuousClock.Instant, grantedAt now: ContinuousClock.Instant
    ) -> ContinuousClock.Instant {
        let expires = expires.clamped(around: now)
        let lifetime = max(expires - now, .zero)
        var due = max(expires.adding(clamped: .zero - configuration.refreshMargin), now + lifetime / 2)
        if let last = lastRefresh[service] {
            due = max(due, last.adding(clamped: configuration.minimumRefreshInterval))
        }
        return due
    }

    /// Sets (or with nil clears) how often a service's flow needs a ping; arms its next ping at a
    /// random 80–100 % of the interval from now.
    public func setFlowPingInterval(_ interval: Duration?, for service: ServiceID) {
        let interval = interval.map { $0.clamped(to: configuration.minimumPingInterval...TimeBounds.longest) }
        intervals[service] = interval
        guard !pingsAsleep.contains(service) else { return }
        pingAt[service] = interval.map { clock.now + jittered($0) }
        rearm()
    }

    /// The service's flow just carried a response (a successful REGISTER, any answered request):
    /// its next ping is re-armed a random 80–100 % of its interval from now. Nothing for a service
    /// without a flow-ping interval.
    public func flowActive(_ service: ServiceID) {
        guard let interval = intervals[service], !pingsAsleep.contains(service) else { return }
        pingAt[service] = clock.now + jittered(interval)
        rearm()
    }

    /// When a service's next ping is due, if it has a flow-ping interval.
    public func nextPing(of service: ServiceID) -> ContinuousClock.Instant? { pingAt[service] }

    /// Forgets a service.
    public func remove(_ service: ServiceID) {
        intervals.removeValue(forKey: service)
        lastRefresh.removeValue(forKey: service)
        refreshesAsleep.removeValue(forKey: service)
        pingsAsleep.remove(service)
        let had = dueAt[service] != nil || pingAt[service] != nil
        dueAt[service] = nil
        pingAt[service] = nil
        guard had else { return }
        rearm()
    }

    /// Foreground or not decides whether the minimum background interval applies. The manager
    /// passes the rules engine's app state after each app event is decided.
    public func setAppState(_ state: AppState) {
        if state == .foreground {
            backgroundSince = nil
        } else if backgroundSince == nil {
            backgroundSince = clock.now
        }
        rearm()
    }

    /// Disarms the timer for good.
    public func stop() {
        stopped = true
        timer.disarm()
    }

    private func nextInstant() -> ContinuousClock.Instant? {
        guard !stopped else { return nil }
        var refresh = dueAt.earliest()
        var ping = pingAt.earliest()
        if !inForeground {
            let minimum = configuration.minimumBackgroundInterval
            if let last = lastWakeUp { refresh = refresh.map { max($0, last.adding(clamped: minimum)) } }
            let since = [lastWakeUp, backgroundSince].compactMap { $0 }.max()
            if let since { ping = ping.map { max($0, since.adding(clamped: minimum)) } }
        }
        return [refresh, ping].compactMap { $0 }.min()
    }

    private func rearm() {
        timer.arm(nextInstant(), on: clock) { await self.fire(scheduledAt: $0) }
    }

    private func fire(scheduledAt instant: ContinuousClock.Instant) {
        guard timer.claim(instant) else { return }
        wakeUps += 1
        let now = clock.now
        lastWakeUp = now
        let window = inForeground ? configuration.coalescingWindow : configuration.minimumBackgroundInterval
        let horizon = now.adding(clamped: window)
        let refresh = dueAt.removeDue(by: horizon).sorted()
        for id in refresh { lastRefresh[id] = now }
        let pinged = pingAt.removeDue(by: horizon)
        for id in pinged { pingAt[id] = intervals[id].map { now + jittered($0) } }
        let refreshed = Set(refresh)
        let ping = pinged.filter { !refreshed.contains($0) }.sorted()
        rearm()
        if !refresh.isEmpty || !ping.isEmpty { onDue(refresh, ping) }
    }

    /// A random 80–100 % of `interval` (RFC 5626 §4.4.1).
    private func jittered(_ interval: Duration) -> Duration {
        interval * Double.random(in: 0.8...1, using: &random)
    }
}
