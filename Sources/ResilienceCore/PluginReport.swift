/// What a plugin tells the manager between actions, on ``ResiliencePlugin/reports``.
///
/// The manager applies each report as it arrives, in order:
/// - ``flowLost(_:)`` becomes a `flow.lost` trigger for those services, throttled per service by
///   the backoff (a server that accepts and drops every flow gets no storm). A flow the plugin
///   closed itself (address change, shutdown) is never reported.
/// - ``serviceChanged(_:)`` replaces the service in the manager's table: a new `expires` re-arms
///   its refresh, a new `flowPingInterval` its flow ping, a new call state is a
///   `call.state-changed` trigger. An unknown service is added.
/// - ``flowActive(_:)`` re-arms those services' flow pings from now, as a successful action of
///   theirs does: a response to a request no action planned (a call's, a subscription's) proves
///   the flow as well as a ping would.
/// - ``serviceAdded(_:)`` starts tracking a service (an incoming call); ``serviceRemoved(_:)``
///   stops tracking it (a call that ended). Adding a known service replaces it.
public enum PluginReport: Hashable, Sendable {
    /// The flows these services rode on failed: the server closed it, a flow ping went
    /// unanswered, the server's port was unreachable.
    case flowLost([ServiceID])
    /// The flows these services ride on just carried a response: no ping is needed for them
    /// until their interval has passed again.
    case flowActive([ServiceID])
    /// The service's state changed (expiry, flow-ping interval, call state).
    case serviceChanged(ClientService)
    /// A service the plugin created.
    case serviceAdded(ClientService)
    /// A service that ended.
    case serviceRemoved(ServiceID)
}
