import Logging
import Metrics
import ResilienceCore
import ResilienceRules

/// Flap damping between the trigger queue and the rules (see ``ResilienceManager``'s invariants).
extension ResilienceManager {
    /// App events that count as an app-state flap; interruptions are not damped.
    static let dampedAppEvents: Set<AppEvent> = [.enteredBackground, .enteredForeground, .suspending, .resumed]

    /// Whether `item` is decided now. A held item is remembered and released by the damping timer.
    func admit(_ item: QueuedTrigger, at now: ContinuousClock.Instant) -> Bool {
        guard !item.isRelease else { return true }
        switch item.trigger {
        case .network(.lost):
            _ = networkDamping.recordFlap(at: now)
            heldNetworkSince = nil
            guard let held = heldNetwork else { return true }
            // The return damping held is gone again; rules and executor still see the loss.
            heldNetwork = nil
            report(.network, held.trigger, released: false, at: now)
            return false
        case .network:
            guard heldNetwork != nil || !rules.networkAvailable, networkDamping.isSuppressed(at: now) else {
                return true
            }
            if heldNetwork == nil { heldNetworkSince = now }
            heldNetwork = item
            dampedCounters[.network]?.increment()
            report(.network, item.trigger, released: false, at: now)
            rearmDampingTimer()
            return false
        case .app(let event) where Self.dampedAppEvents.contains(event):
            guard appDamping.recordFlap(at: now) else {
                guard !heldAppEvents.isEmpty else { return true }
                // Suppression is over but its release has not fired yet: release now, this one included.
                heldAppEvents.append(event)
                releaseAppChanges(at: now)
                return false
            }
            heldAppEvents.append(event)
            dampedCounters[.app]?.increment()
            report(.app, item.trigger, released: false, at: now)
            rearmDampingTimer()
            return false
        default:
            return true
        }
    }

    func dampingStatus() -> DampingStatus {
        let now = clock.now
        return DampingStatus(
            networkPenalty: networkDamping.penalty(at: now), appPenalty: appDamping.penalty(at: now),
            networkHeldUntil: networkRelease,
            appHeldUntil: heldAppEvents.isEmpty ? nil : appDamping.reuseInstant, networkFlaps: networkDamping.flaps,
            appChanges: appDamping.flaps)
    }

    /// When the held network return is released (nil: none is held).
    private var networkRelease: ContinuousClock.Instant? {
        guard heldNetwork != nil, let since = heldNetworkSince else { return nil }
        return networkDamping.releaseInstant(ofReturnAt: since)
    }

    private func rearmDampingTimer() {
        let instants = [
            networkRelease,
            heldAppEvents.isEmpty ? nil : appDamping.reuseInstant,
        ]
        let next = isShuttingDown ? nil : instants.compactMap { $0 }.min()
        dampingTimer.arm(next, on: clock) { await self.dampingDue(scheduledAt: $0) }
    }

    private func dampingDue(scheduledAt instant: ContinuousClock.Instant) {
        guard dampingTimer.claim(instant), !isShuttingDown else { return }
        let now = clock.now
        let settled = networkRelease.map { now >= $0 } ?? false
        if var held = heldNetwork, settled || !networkDamping.isSuppressed(at: now) {
            if settled { networkDamping.settle(at: now) }
            heldNetwork = nil
            heldNetworkSince = nil
            held.isRelease = true
            report(.network, held.trigger, released: true, at: now)
            if held.transition?.path.isSatisfied ?? true { requeueFirst([held]) }
        }
        if !heldAppEvents.isEmpty, !appDamping.isSuppressed(at: now) { releaseAppChanges(at: now) }
        rearmDampingTimer()
    }

    /// Queues the events that lead from the decided app state to the one the held events reach
    /// (none when the app is back where it was): N held changes cost at most two decisions.
    private func releaseAppChanges(at now: ContinuousClock.Instant) {
        let target = heldAppEvents.reduce(rules.appState) { $1.nextState(from: $0) }
        heldAppEvents = []
        let events = Self.events(from: rules.appState, to: target)
        for event in events { report(.app, .app(event), released: true, at: now) }
        requeueFirst(events.map { QueuedTrigger(trigger: .app($0), isRelease: true) })
    }

    /// Puts released triggers in front of the queue: they happened before anything queued.
    private func requeueFirst(_ items: [QueuedTrigger]) {
        guard !isShuttingDown, !items.isEmpty else { return }
        queue.insert(contentsOf: items, at: 0)
        queueNeedsCoalescing = true
        wake.continuation.yield()
    }

    /// The app events that move the rules from `from` to `to` (as ``setAppState(_:)`` reports them).
    static func events(from: AppState, to: AppState) -> [AppEvent] {
        guard from != to else { return [] }
        var events: [AppEvent] = []
        var state = from
        if state == .suspended {
            events.append(.resumed)
            state = AppEvent.resumed.nextState(from: state)
        }
        switch to {
        case .foreground where state != .foreground: events.append(.enteredForeground)
        case .background where state != .background: events.append(.enteredBackground)
        case .suspended: events.append(.suspending)
        default: break
        }
        return events
    }

    private func report(
        _ source: DampingEvent.Source, _ trigger: Trigger, released: Bool, at now: ContinuousClock.Instant
    ) {
        let damping = source == .network ? networkDamping : appDamping
        let event = DampingEvent(
            source: source, trigger: trigger, released: released, penalty: damping.penalty(at: now),
            until: released ? nil : (source == .network ? networkRelease : damping.reuseInstant), at: now)
        logger.info(
            released ? "damping released" : "damping held",
            metadata: [
                "damping.source": "\(source.rawValue)", "trigger": "\(trigger.name)",
                "damping.penalty": "\(Int(event.penalty))",
            ])
        broadcast.yield(.damping(event))
    }
}
