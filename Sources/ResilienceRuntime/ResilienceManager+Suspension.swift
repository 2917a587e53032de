import Logging
public import ResilienceCore
import ResilienceRules

/// Suspended means asleep: work decided before the suspension waits for the app to wake.
///
/// Invariants:
/// - After every app event, push, push window end, call-state change and `started` is decided,
///   the executor learns the decided app state and the services kept awake
///   (``ActionExecutor/setSuspended(_:keepingAwake:then:epoch:)``), with the decision's actions,
///   so a retry begun in the foreground sends nothing and arms no timer while suspended, and a
///   push's `register` replaces the held one instead of racing it.
/// - Kept awake while suspended: every service of an account a push woke (its wake window is
///   open) or of an account with a call, and every call.
/// - What the executor held or released is one ``ResilienceEvent/suspensionHold(_:)`` and one log
///   line per change, naming at most ``SuspensionHoldEvent/namedLimit`` services of each list.
extension ResilienceManager {
    /// Whether deciding `trigger` may change what the suspended app holds.
    static func mayChangeSuspension(_ trigger: Trigger) -> Bool {
        switch trigger {
        case .app, .push, .pushWindowEnded, .callStateChanged, .started: true
        default: false
        }
    }

    /// The services a suspended app keeps awake (see the invariants above).
    var keptAwakeWhileSuspended: Set<ServiceID> {
        let accounts = Set(pushWindows.keys).union(
            services.values.compactMap { if case .call = $0.kind { $0.account } else { nil } })
        return Set(
            services.values.filter {
                if case .call = $0.kind { return true }
                return $0.account.map(accounts.contains) ?? false
            }.map(\.id))
    }

    /// A service was added or removed: while suspended, what sleeps and what is held follow.
    func servicesChangedWhileSuspended() async {
        guard rules.appState == .suspended else { return }
        await updateSleep()
        await submitAcrossSuspension([], trigger: nil)
    }

    /// Submits `actions` across the executor's suspension hold and reports what changed.
    func submitAcrossSuspension(_ actions: [PlannedAction], trigger: Trigger?) async {
        let suspended = rules.appState == .suspended
        let change = await executor.setSuspended(
            suspended, keepingAwake: suspended ? keptAwakeWhileSuspended : [], then: actions, epoch: epoch)
        guard !change.isEmpty else { return }
        let event = SuspensionHoldEvent(
            trigger: trigger, appState: rules.appState, held: change.held, released: change.released, at: clock.now)
        logger.notice(
            "suspension hold changed",
            metadata: [
                "trigger": "\(trigger?.name ?? "services-changed")", "app.state": "\(rules.appState)",
                "hold": "\(event.summary)",
            ])
        broadcast.yield(.suspensionHold(event))
    }
}

/// What a suspended app held, or its waking released, of the work decided before the suspension.
public struct SuspensionHoldEvent: Hashable, Sendable {
    /// How many services of each list ``summary`` names.
    public static let namedLimit = 5

    /// The trigger whose decision changed the hold; nil when a service was added or removed.
    public var trigger: Trigger?
    /// The app state after it.
    public var appState: AppState
    /// Services whose next action now waits for the app to wake, sorted.
    public var held: [ServiceID]
    /// Services whose held action now runs (or was replaced by the decision), sorted.
    public var released: [ServiceID]
    public var at: ContinuousClock.Instant

    public init(
        trigger: Trigger?, appState: AppState, held: [ServiceID], released: [ServiceID], at: ContinuousClock.Instant
    ) {
        self.trigger = trigger
        self.appState = appState
        self.held = held
        self.released = released
        self.at = at
    }

    /// `held 2 (alice.reg, bob.reg), released 0`: counts, and at most ``namedLimit`` escaped
    /// names per list.
    public var summary: String {
        func part(_ word: String, _ ids: [ServiceID]) -> String {
            guard !ids.isEmpty else { return "\(word) 0" }
            var names = ids.prefix(Self.namedLimit).map { LogText.escaped($0.rawValue, limit: 64) }
            if ids.count > Self.namedLimit { names.append("+\(ids.count - Self.namedLimit) more") }
            return "\(word) \(ids.count) (\(names.joined(separator: ", ")))"
        }
        return part("held", held) + ", " + part("released", released)
    }
}
