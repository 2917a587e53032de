/// Something that watches the network: the netlink monitor in production, a scripted source in
/// tests (`ResilienceTesting.ScriptedNetworkSource`).
///
/// Invariants every conformer keeps:
/// - `transitions()` yields `.initial` first, to every subscriber, then only changes.
/// - Any number of subscribers may call `events()` and `transitions()`; each gets every element
///   from the moment it subscribed. Streams finish only on shutdown.
public protocol NetworkEventSource: Sendable {
    /// The current facts.
    func snapshot() async -> NetworkSnapshot
    /// The current path, derived with the source's filter.
    func currentPath() async -> NetworkPath
    /// Raw events as they are read (and synthesized ones after an overrun, then `.resynced`).
    func events() async -> AsyncStream<NetworkEvent>
    /// Debounced path transitions, starting with `.initial`.
    func transitions() async -> AsyncStream<PathTransition>
}
