import ResilienceCore
import ResilienceRuntime
import ResilienceTesting

func planned(
    _ kind: ActionKind, _ service: ServiceID, after: Set<ServiceID> = [], trigger: Trigger = .network(.restored)
) -> PlannedAction {
    .fixture(kind, for: service, trigger: trigger, after: after)
}

let lostPath = NetworkPath(status: .unsatisfied(.noCarrier))
let upPath = NetworkPath(status: .satisfied)

extension ActionEvent {
    var isStarted: Bool { outcome == .started }
    var isSucceeded: Bool { outcome == .succeeded }
    var isRetrying: Bool {
        if case .retrying = outcome { return true }
        return false
    }
    var retryAt: ContinuousClock.Instant? {
        if case .retrying(let at, _) = outcome { return at }
        return nil
    }
}
