import Logging
public import ResilienceCore
import ResilienceRules

/// Push (RFC 8599): a suspended account with a push token sleeps, a push wakes it for a window.
///
/// Invariants:
/// - Sleep happens only while the app is suspended (as decided), never to a service kept awake
///   (`keptAwakeWhileSuspended`: a push-woken account's, an account's with a call, a call).
///   Then an account with a push token (``setPushAvailable(_:for:)``) sleeps whole: its services
///   arm no refresh and no ping (``WakeUpScheduler/setAsleep(_:)``). Any other service's refresh
///   (ping) sleeps exactly when the rules in force would decide nothing for its `refresh.due`
///   (`flow.ping-due`) in that state (`RulesEngine.refreshWakeUpPlansAnything(for:among:at:)`):
///   a suspended process is never woken for a wake-up that does nothing, and a policy rule
///   `when: [suspended]` for it keeps it armed. A custom `decide` cannot be asked: then only push
///   accounts sleep. Sleep is re-derived after every app event, network change, push, window end,
///   push token and service added or removed; on waking a refresh that fell due runs at once.
/// - A push is decided like any trigger (`push.received.KIND`, in arrival order) and opens the
///   account's wake window of `Policy.pushWakeWindow` on the manager's clock; a later push
///   extends it. When it ends with a call of the account still there, it is extended by another
///   window (a woken call runs at full service until it is over); otherwise, if the app is
///   suspended, `push.window-ended` is decided for the account (by default: release its flow).
/// - One timer serves every window; none is armed while no window is open.
extension ResilienceManager {
    /// A push notification for an account arrived: it is decided in order with every other
    /// trigger (by default the account registers at once, in every app state) and keeps the
    /// account awake for the policy's wake window.
    public func push(_ push: Push) async {
        logger.info(
            "push received",
            metadata: [
                "account": "\(LogText.escaped(push.account))", "kind": "\(push.kind.rawValue)",
                "payload": "\(LogText.escaped(push.payload ?? "", limit: 64))",
            ])
        enqueue(.push(push))
        guard !isShuttingDown else { return }
        pushWindows[push.account] = clock.now.adding(clamped: rules.policy.pushWakeWindow)
        rearmPushWindowTimer()
        await updateSleep()
    }

    /// Whether `account` has a push token (RFC 8599): only then may it sleep while suspended
    /// (the rules' condition `push-available`).
    public func setPushAvailable(_ available: Bool, for account: String) async {
        if available { rules.pushAccounts.insert(account) } else { rules.pushAccounts.remove(account) }
        await updateSleep()
    }

    /// The accounts a push wake window holds awake now.
    public var wokenAccounts: Set<String> { Set(pushWindows.keys) }

    /// Hands the scheduler the refreshes and pings that sleep now (see the invariants above).
    func updateSleep() async {
        var refreshes: Set<ServiceID> = []
        var pings: Set<ServiceID> = []
        if rules.appState == .suspended {
            let awake = keptAwakeWhileSuspended
            let list = services.values.sorted { $0.id < $1.id }
            let now = clock.now
            for service in list where !awake.contains(service.id) {
                if let account = service.account, rules.pushAccounts.contains(account) {
                    refreshes.insert(service.id)
                    pings.insert(service.id)
                    continue
                }
                guard customDecide == nil else { continue }
                if !rules.refreshWakeUpPlansAnything(for: service, among: list, at: now) {
                    refreshes.insert(service.id)
                }
                if !rules.pingWakeUpPlansAnything(for: service, among: list, at: now) { pings.insert(service.id) }
            }
        }
        await scheduler.setAsleep(refreshes: refreshes, pings: pings)
    }

    private func rearmPushWindowTimer() {
        pushWindowTimer.arm(isShuttingDown ? nil : pushWindows.values.min(), on: clock) {
            await self.pushWindowsEnded(scheduledAt: $0)
        }
    }

    private func pushWindowsEnded(scheduledAt instant: ContinuousClock.Instant) async {
        guard pushWindowTimer.claim(instant) else { return }
        let now = clock.now
        for (account, end) in pushWindows.sorted(by: { $0.key < $1.key }) where end <= now {
            let hasCall = services.values.contains {
                guard case .call = $0.kind else { return false }
                return $0.account == account
            }
            if hasCall {
                pushWindows[account] = now.adding(clamped: rules.policy.pushWakeWindow)
                continue
            }
            pushWindows[account] = nil
            logger.info("push wake window ended", metadata: ["account": "\(LogText.escaped(account))"])
            if rules.appState == .suspended { enqueue(.pushWindowEnded(account: account)) }
        }
        rearmPushWindowTimer()
        await updateSleep()
    }
}
