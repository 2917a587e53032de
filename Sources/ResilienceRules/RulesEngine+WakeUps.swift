public import ResilienceCore

extension RulesEngine {
    /// Whether a refresh wake-up naming `service` (`refresh.due`) would plan any action in the
    /// current app state: when it would not, waking the process for that refresh is wasted.
    ///
    /// Asked of the policy in force, never of a fixed table, and without changing the engine. It
    /// is evaluated as of the service's expiry (or `now`, if later), when the refresh falls due,
    /// so a rule's `stale` condition holds as it will then; every other condition is timeless.
    public func refreshWakeUpPlansAnything(
        for service: ClientService, among services: [ClientService], at now: ContinuousClock.Instant
    ) -> Bool {
        plansAnything(.refreshDue([service.id]), for: service, among: services, at: now)
    }

    /// Whether a flow-ping wake-up naming `service` (`flow.ping-due`) would plan any action in
    /// the current app state (see ``refreshWakeUpPlansAnything(for:among:at:)``).
    public func pingWakeUpPlansAnything(
        for service: ClientService, among services: [ClientService], at now: ContinuousClock.Instant
    ) -> Bool {
        plansAnything(.flowPingDue([service.id]), for: service, among: services, at: now)
    }

    private func plansAnything(
        _ trigger: Trigger, for service: ClientService, among services: [ClientService],
        at now: ContinuousClock.Instant
    ) -> Bool {
        let due = max(now, service.expires ?? now)
        return !plan(trigger, services: services, before: appState, now: due).isEmpty
    }
}
