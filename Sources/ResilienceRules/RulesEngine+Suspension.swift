import ResilienceCore

extension RulesEngine {
    /// The change to remember after `next` arrives while suspended, given the one remembered
    /// (see ``changeWhileSuspended``): a loss never replaces a change; an address or interface
    /// change is not replaced by a later restore or route change; otherwise the later one wins.
    static func stronger(_ remembered: NetworkTrigger?, _ next: NetworkTrigger) -> NetworkTrigger? {
        func rank(_ trigger: NetworkTrigger?) -> Int {
            switch trigger {
            case .none, .lost: 0
            case .restored, .changed(.defaultRoute): 1
            case .changed(.address), .changed(.interfaceSwitched): 2
            }
        }
        if case .lost = next { return remembered }
        return rank(next) >= rank(remembered) ? next : remembered
    }
}
