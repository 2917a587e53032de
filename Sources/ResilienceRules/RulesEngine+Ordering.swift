import ResilienceCore

extension RulesEngine {
    /// Drops refreshes that a fresh register or subscribe of the same service in the batch covers,
    /// and a re-INVITE that a resume (itself a re-INVITE with the current address) covers.
    static func subsumed(_ planned: [PlannedAction]) -> [PlannedAction] {
        let covering: [ActionKind: ActionKind] = [
            .refreshRegistration: .register, .refreshSubscription: .subscribe, .reinviteCall: .resumeCall,
        ]
        return planned.filter { action in
            guard let cover = covering[action.kind] else { return true }
            return !planned.contains { $0.service == action.service && $0.kind == cover }
        }
    }

    /// Orders a batch: registration bring-up first, then everything else, then unregister; fills
    /// `after` with the same account's registration (or, for unregister, its teardown).
    ///
    /// Invariant: the sort is stable, so within a phase the rule order and service order hold.
    static func ordered(_ planned: [PlannedAction], services: [ClientService]) -> [PlannedAction] {
        let byID = Dictionary(services.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        func isRegistration(_ id: ServiceID) -> Bool { byID[id]?.kind == .registration }
        func account(_ id: ServiceID) -> String? { byID[id]?.account }
        func phase(_ action: PlannedAction) -> Int {
            if action.kind == .unregister { return 2 }
            return isRegistration(action.service) ? 0 : 1
        }
        var sorted = planned.enumerated().sorted { lhs, rhs in
            (phase(lhs.element), lhs.offset) < (phase(rhs.element), rhs.offset)
        }.map(\.element)

        for index in sorted.indices {
            let action = sorted[index]
            let owner = account(action.service)
            switch phase(action) {
            case 1:
                sorted[index].after = Set(
                    sorted.filter { phase($0) == 0 && account($0.service) == owner }.map(\.service))
            case 2:
                sorted[index].after = Set(
                    sorted.filter { phase($0) == 1 && account($0.service) == owner }.map(\.service))
            default:
                break
            }
        }
        return sorted
    }
}
