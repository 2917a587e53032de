import Logging
import ResilienceCore
internal import Synchronization

extension ExternalPluginHub {
    /// What a hello got: the connection to pass back with the plugin's later messages, and each
    /// declared service accepted or refused (with why).
    struct Accepted {
        let connection: Connection
        let services: [ServiceID]
        let refused: [(ServiceID, String)]
    }

    /// Takes a plugin's hello: its declaration replaces the one it made before (services it no
    /// longer declares end, new ones start); the welcome is sent, then what waited for it.
    /// - Throws: ``DaemonError`` when the plugin is connected already.
    func connect(
        plugin: String, hello: ExternalPluginMessage.Hello, send: @escaping @Sendable (String) -> Bool
    ) throws(DaemonError) -> Accepted {
        var reports: [PluginReport] = []
        let result: Result<Accepted, DaemonError> = state.withLock { state in
            if state.plugins[plugin]?.connection != nil {
                return .failure(DaemonError("plugin: \"\(plugin)\" is connected already"))
            }
            state.nextConnection += 1
            let connection = Connection(plugin: plugin, number: state.nextConnection, send: send)
            var accepted: [ServiceID] = []
            var refused: [(ServiceID, String)] = []
            for service in hello.services {
                if let why = refusal(of: service.id, for: plugin, in: state) {
                    refused.append((service.id, why))
                    continue
                }
                accepted.append(service.id)
                switch state.owners[service.id]?.service {
                case nil: reports.append(.serviceAdded(service))
                case let known? where known != service: reports.append(.serviceChanged(service))
                default: break
                }
                state.owners[service.id] = Owned(plugin: plugin, service: service)
            }
            for gone in state.plugins[plugin]?.services.subtracting(accepted) ?? [] {
                state.owners[gone] = nil
                reports.append(.serviceRemoved(gone))
            }
            state.plugins[plugin] = Declaration(
                actions: hello.actions, services: Set(accepted), connection: connection)
            // Queued under the lock, so the welcome comes first and no perform overtakes it
            // (sending only queues; the session's writer does the I/O).
            _ = send(ExternalPluginLines.welcome(plugin: plugin, accepted: accepted, refused: refused))
            for (id, pending) in state.pending.sorted(by: { $0.key < $1.key })
            where pending.plugin == plugin && pending.sentOn == nil {
                state.pending[id]?.sentOn = connection.number
                _ = send(pending.line)
            }
            return .success(Accepted(connection: connection, services: accepted, refused: refused))
        }
        let accepted = try result.get()
        for report in reports { reportSink.yield(report) }
        return accepted
    }

    /// Why `plugin` may not declare service `id`, or nil when it may.
    private func refusal(of id: ServiceID, for plugin: String, in state: State) -> String? {
        if isReserved(id) { return "carried by the daemon's own plugin" }
        if let owner = state.owners[id]?.plugin, owner != plugin { return "declared by plugin \"\(owner)\"" }
        if state.owners[id] == nil && state.owners.count >= Self.maxServices {
            return "beyond the \(Self.maxServices) external services the daemon keeps"
        }
        return nil
    }

    /// The plugin's session ended: every action in flight on it fails (retryable); its services
    /// and declaration stay for its return.
    func disconnect(_ connection: Connection) {
        let failed = state.withLock { state -> [Pending] in
            guard state.plugins[connection.plugin]?.connection?.number == connection.number else { return [] }
            state.plugins[connection.plugin]?.connection = nil
            let gone = state.pending.filter { $0.value.sentOn == connection.number }
            for id in gone.keys { state.pending[id] = nil }
            return Array(gone.values)
        }
        for pending in failed {
            pending.continuation.resume(throwing: PluginError("external plugin \"\(connection.plugin)\" disconnected"))
        }
        if !failed.isEmpty {
            logger.notice(
                "external plugin disconnected with actions in flight",
                metadata: ["plugin": "\(connection.plugin)", "failed": "\(failed.count)"])
        }
    }

    /// The plugin's outcome for action `id`.
    /// - Throws: ``DaemonError`` when `id` is not in flight on this connection (never sent,
    ///   answered already, or withdrawn).
    func report(_ outcome: ExternalOutcome, for id: UInt64, from connection: Connection) throws(DaemonError) {
        let pending = state.withLock { state -> Pending? in
            guard let pending = state.pending[id], pending.sentOn == connection.number else { return nil }
            state.pending[id] = nil
            return pending
        }
        guard let pending else { throw DaemonError("id: no action \(id) in flight on this connection") }
        pending.continuation.resume(returning: outcome)
    }

    /// A service the plugin added or changed after its hello (a call that started or changed
    /// state).
    func declare(_ service: ClientService, from connection: Connection) throws(DaemonError) {
        let report = try state.withLock { state throws(DaemonError) -> PluginReport? in
            if let why = refusal(of: service.id, for: connection.plugin, in: state) {
                throw DaemonError("service: \(service.id) is \(why)")
            }
            let known = state.owners[service.id]?.service
            guard known != service else { return nil }
            state.owners[service.id] = Owned(plugin: connection.plugin, service: service)
            state.plugins[connection.plugin]?.services.insert(service.id)
            return known == nil ? .serviceAdded(service) : .serviceChanged(service)
        }
        if let report { reportSink.yield(report) }
    }

    /// A service of the plugin ended.
    func end(_ id: ServiceID, from connection: Connection) throws(DaemonError) {
        try state.withLock { state throws(DaemonError) in
            guard state.owners[id]?.plugin == connection.plugin else {
                throw DaemonError("service: \(id) is not a service of \"\(connection.plugin)\"")
            }
            state.owners[id] = nil
            state.plugins[connection.plugin]?.services.remove(id)
        }
        reportSink.yield(.serviceRemoved(id))
    }

    /// The flows under these services (the plugin's own) failed.
    func flowLost(_ ids: [ServiceID], from connection: Connection) throws(DaemonError) {
        let foreign = state.withLock { state in ids.filter { state.owners[$0]?.plugin != connection.plugin } }
        if let first = foreign.first {
            throw DaemonError("services: \(first) is not a service of \"\(connection.plugin)\"")
        }
        reportSink.yield(.flowLost(ids))
    }

    /// The most services all external plugins together may declare.
    static let maxServices = 4096
}
