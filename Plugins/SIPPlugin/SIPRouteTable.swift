internal import ResilienceCore

/// Which account and usage serve each service: the plugin's answer to "is this mine, and who
/// does it?". Starts with the accounts' configured services and grows and shrinks at run time
/// (a subscription added by the app, next a call).
///
/// A value; ``SIPPlugin`` keeps it behind a lock. Invariants: one route per service; adding a
/// service that is present changes nothing and says so; removing returns what was removed.
struct SIPRouteTable: Sendable {
    enum Route: Hashable, Sendable {
        case registration(account: String)
        case subscription(account: String, target: SubscriptionTarget)
        case publication(account: String)
        /// A call placed or received at run time (reported as a service while it lasts).
        case call(account: String, call: CallID)

        var account: String {
            switch self {
            case .registration(let name), .subscription(let name, _), .publication(let name), .call(let name, _): name
            }
        }
    }

    private var routes: [ServiceID: Route] = [:]

    /// The configured services of `accounts`: registration, publication, subscriptions.
    init(accounts: [SIPAccount]) {
        for account in accounts {
            routes[account.registrationService] = .registration(account: account.name)
            if account.publishesPresence {
                routes[account.presencePublishService] = .publication(account: account.name)
            }
            for target in account.subscriptions {
                routes[target.service(of: account)] = .subscription(account: account.name, target: target)
            }
        }
    }

    subscript(service: ServiceID) -> Route? { routes[service] }

    var count: Int { routes.count }

    /// Adds `route` for `service`; false (and no change) when the service has a route already.
    @discardableResult
    mutating func add(_ route: Route, for service: ServiceID) -> Bool {
        guard routes[service] == nil else { return false }
        routes[service] = route
        return true
    }

    /// Removes the route of `service` and returns it (nil when there was none).
    @discardableResult
    mutating func remove(_ service: ServiceID) -> Route? { routes.removeValue(forKey: service) }
}
