public import ResilienceCore

/// A `NetworkEventSource` a test drives by hand: set the path, emit transitions and raw events.
///
/// It keeps the source invariants: every `transitions()` subscriber first gets `.initial` (the
/// path at the moment it subscribed), then every transition emitted afterwards; `lost` and
/// `restored` are derived from the path so they alternate. Nothing is debounced: a test that
/// wants a hold-down scripts it.
///
/// **An immediate `lose()` then `restore()` is coalesced into nothing by the manager.** The source
/// emits both transitions, but the `ResilienceManager` that has not yet decided the
/// loss when the restore arrives drops the pair: no decision, no new epoch, only a
/// `flapCoalesced` event (and a `changed` decision when the restored path differs). To see the
/// loss decided, wait for its decision before restoring:
///
/// ```swift
/// let network = ScriptedNetworkSource()
/// let events = EventRecorder.recording(manager.events())
/// await network.lose(.noCarrier)
/// try await events.wait("the loss decided") { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
/// await network.restore()
/// ```
public actor ScriptedNetworkSource: NetworkEventSource {
    private let clock: any RuntimeClock
    private var snapshotValue: NetworkSnapshot
    private var path: NetworkPath
    private var lostAt: ContinuousClock.Instant?
    private var seq: UInt64 = 0
    private let transitionBroadcast = Broadcast<PathTransition>()
    private let eventBroadcast = Broadcast<NetworkEvent>()

    /// - Parameters:
    ///   - path: the path at start; satisfied on `eth0` (198.18.0.2) by default.
    ///   - snapshot: the links and addresses plugins see; empty by default.
    ///   - clock: stamps transitions and events.
    public init(
        path: NetworkPath = ScriptedNetworkSource.satisfiedPath, snapshot: NetworkSnapshot = .empty,
        clock: any RuntimeClock = ContinuousClock()
    ) {
        self.path = path
        self.snapshotValue = snapshot
        self.clock = clock
    }

    /// A satisfied path on `eth0` with the benchmarking address 198.18.0.2.
    public static let satisfiedPath = NetworkPath(
        status: .satisfied, primaryInterface: InterfaceRef(ifindex: 2, name: "eth0"),
        addresses: [InterfaceAddress(ifindex: 2, family: .ipv4, address: "198.18.0.2", prefixLength: 15)],
        defaultRoutes: [DefaultRoute(family: .ipv4, ifindex: 2, gateway: "198.18.0.1", metric: 100)])

    public func snapshot() -> NetworkSnapshot { snapshotValue }
    public func currentPath() -> NetworkPath { path }

    public func events() -> AsyncStream<NetworkEvent> { eventBroadcast.subscribe() }

    public func transitions() -> AsyncStream<PathTransition> {
        transitionBroadcast.subscribe(startingWith: PathTransition(kind: .initial, path: path, at: clock.now))
    }

    /// The path goes unsatisfied; emits `lost(reason)` unless it already was.
    public func lose(_ reason: LossReason = .noCarrier) {
        guard path.isSatisfied else { return }
        lostAt = clock.now
        setPath(NetworkPath(status: .unsatisfied(reason)), kind: .lost(reason))
    }

    /// The path is satisfied again; emits `restored(downtime:)` unless it already was.
    public func restore(_ restored: NetworkPath = ScriptedNetworkSource.satisfiedPath) {
        guard !path.isSatisfied else { return }
        let downtime = lostAt.map { clock.now - $0 } ?? .zero
        setPath(restored, kind: .restored(downtime: downtime))
    }

    /// The path changes while staying satisfied (new address, route or interface).
    public func change(_ change: PathChange, to newPath: NetworkPath) {
        setPath(newPath, kind: .changed(change))
    }

    /// Replaces the snapshot (what plugins see in their context).
    public func setSnapshot(_ snapshot: NetworkSnapshot) { snapshotValue = snapshot }

    /// Emits a raw event with the next sequence number.
    public func send(_ kind: NetworkEvent.Kind) {
        seq += 1
        eventBroadcast.yield(NetworkEvent(seq: seq, kind: kind, at: clock.now))
    }

    /// Ends every stream, as a source does on shutdown.
    public func finish() {
        transitionBroadcast.finish()
        eventBroadcast.finish()
    }

    private func setPath(_ newPath: NetworkPath, kind: PathTransition.Kind) {
        let previous = path
        path = newPath
        transitionBroadcast.yield(PathTransition(kind: kind, path: newPath, previous: previous, at: clock.now))
    }
}
