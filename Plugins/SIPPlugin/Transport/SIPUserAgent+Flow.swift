internal import Logging
internal import NIOCore
public import ResilienceCore
internal import Synchronization

/// The agent's flows: the one to the registrar for the current path, its opening, its loss, and
/// closing what the path no longer has.
extension SIPUserAgent {
    /// The flow for the current path: the existing one when its address and interface are still
    /// the chosen ones, otherwise a new one bound to the path's address and, where the kernel's
    /// route could take another link, to the path's interface (``InterfaceBinding``); the old
    /// one is closed.
    ///
    /// Invariant: an opening that a newer one replaced (the address changed again while it
    /// connected), or that ``closeStaleTransports(path:)`` or ``close()`` dropped, never becomes
    /// ``transport``: it is closed when it completes and its waiters get an error. Otherwise a
    /// slow opening for an older address could replace the newer flow that the REGISTER went
    /// through, and every later SUBSCRIBE would open a third flow nobody registers.
    func flow(for path: NetworkPath) async throws -> SIPTransport {
        let remote = try await currentTarget().socketAddress
        let family: AddressFamily = remote.protocol == .inet6 ? .ipv6 : .ipv4
        guard let local = Self.localAddress(in: path, family: family) else {
            throw PluginError("no usable \(family.rawValue) address on the current path")
        }
        let interface = InterfaceBinding.interface(for: local, toward: remote, in: path)
        if let current = transport, current.isActive, current.localHost == local, current.interface == interface,
            current.remote == remote
        {
            return current
        }
        // Actions of different services (registration, subscriptions) may interleave here: they
        // share one opening instead of racing to open two flows.
        if let opening, opening.local == local, opening.remote == remote { return try await opening.task.value }
        if let stale = transport {
            transport = nil
            table.flowClosed(ObjectIdentifier(stale))
            // A flow that died on its own is reported as lost by its close callback, not closed here.
            if stale.isActive {
                logger.info(
                    "sip.transport-rebuilt",
                    metadata: [
                        "from": "\(stale.localHost)", "to": "\(local)",
                        "interface": "\(interface.map { "\($0)" } ?? "-")",
                    ])
                await stale.close(graceful: false)
            }
        }
        openingGeneration += 1
        let generation = openingGeneration
        let task = Task {
            do {
                let opened = try await openFlow(local: local, interface: interface, remote: remote)
                return try await install(opened, generation: generation)
            } catch {
                if opening?.generation == generation { opening = nil }
                throw error
            }
        }
        opening = (local, remote, generation, task)
        return try await task.value
    }

    /// Makes a just-opened flow the agent's ``transport``, unless its opening was replaced or
    /// dropped meanwhile (see ``flow(for:)``): then it is closed instead.
    private func install(_ opened: SIPTransport, generation: UInt64) async throws -> SIPTransport {
        guard opening?.generation == generation else {
            logger.info("sip.transport-superseded", metadata: ["address": "\(opened.localHost)"])
            supersededOpenings &+= 1
            await opened.close(graceful: false)
            throw PluginError("the flow from \(opened.localHost) was superseded while it opened")
        }
        opening = nil
        transport = opened
        return opened
    }

    /// A new flow to `remote` from `local`, its sockets bound to `interface` when given
    /// (``InterfaceBinding/interface(for:toward:in:)`` chooses it).
    func openFlow(local: String, interface: Int32?, remote: SocketAddress) async throws -> SIPTransport {
        serverTransactions.onAckTimeout { [weak self] invite in Task { await self?.finalNotAcknowledged(invite) } }
        InterfaceBinding.noteIfUnavailable(logger)
        let layer = transactionLayer(reliable: account.transport != .udp)
        do {
            return try await SIPTransport.open(
                kind: account.transport, localHost: local, interface: interface, remote: remote, tls: account.tls,
                serverName: SIPTLS.serverName(account.tls, host: account.registrarHost), log: throttledLog,
                user: account.user, flowTag: flowTag, flows: flows,
                onLost: { [weak self] lost in Task { await self?.flowLost(lost) } },
                onPong: { [weak self] in Task { await self?.pongReceived() } },
                inbound: layer.receive)
        } catch let failure as SIPTLSFailure {
            // A certificate or TLS setting that is wrong stays wrong: no retry storm.
            throw PluginError.permanent("cannot open tls flow from \(local): \(failure)")
        } catch {
            throw PluginError("cannot open \(account.transport.rawValue) flow from \(local): \(error)")
        }
    }

    /// Where the messages parsed on one of this agent's flows go: its transaction tables and its
    /// ordered inbound stream.
    /// `provesFlow`: a response there proves the flow to the registrar alive (not so on a
    /// connection to a dialog's remote target).
    func transactionLayer(reliable: Bool, provesFlow: Bool = true) -> TransactionLayer {
        let activity = provesFlow ? self.activity : nil
        return TransactionLayer(
            clients: table, servers: serverTransactions, clock: clock, log: throttledLog, inbound: inboundSink(),
            reliable: reliable, onResponse: { activity?.responseArrived(at: $0) },
            mayReply: { [weak self] in self?.pathSatisfied.withLock { $0 } ?? true })
    }

    /// A flow ended without this agent closing it: fails its transactions and reports the
    /// registration plus the established subscriptions and publication, whose server-side state
    /// may be gone with it.
    func flowLost(_ lost: SIPTransport) {
        guard noteFlowLost(lost) else { return table.flowClosed(ObjectIdentifier(lost)) }
        lastFlowLostByServer = ObjectIdentifier(lost)
        table.flowClosed(ObjectIdentifier(lost))
        if transport === lost {
            transport = nil
            if let waiter = pongWaiter { endPongWait(id: waiter.id, answered: false) }
        }
        let services = servicesOnFlow
        subscriptionsLostTheirFlow()
        throttledLog.log(
            .warning, "sip.flow-lost",
            metadata: [
                "address": "\(lost.localHost)", "services": "\(services.map(\.rawValue).joined(separator: ","))",
            ])
        onFlowLost(services)
    }

    /// The account's registration, then its established subscriptions and publication.
    ///
    /// A subscription already reported lost (`needsRecreation`: its next SUBSCRIBE opens a new
    /// dialog) is left out until that SUBSCRIBE has recreated it, so one loss of its server is
    /// reported once, however many flows fail meanwhile. While a registrar is down, each
    /// REGISTER retry's UDP flow ends with ICMP port unreachable; each such report repeated the
    /// subscriptions, and a repeat the loss throttle released after the executor's retry had
    /// already bound the account and recreated them made every one SUBSCRIBE a second time.
    var servicesOnFlow: [ServiceID] {
        let subscribed = subscriptions.filter { _, state in
            guard state.inDialog, !state.needsRecreation else { return false }
            if case .terminated = state.status.state { return false }
            return true
        }
        return [account.registrationService] + subscribed.keys.sorted()
            + (publication?.etag == nil ? [] : [account.presencePublishService])
    }

    /// Closes the flow when its local address is no longer on the path, or no longer on the
    /// interface its sockets are bound to (a link deleted and made again has a new index).
    public func closeStaleTransports(path: NetworkPath) async {
        if let opening, !path.addresses.contains(where: { $0.address == opening.local }) { self.opening = nil }
        closeDirectConnections(keeping: Set(path.addresses.map(\.address)))
        guard let current = transport else { return }
        let onPath = path.addresses.contains { address in
            address.address == current.localHost && current.interface.map { $0 == address.ifindex } != false
        }
        if !onPath {
            logger.info("sip.transport-closed", metadata: ["address": "\(current.localHost)"])
            transport = nil
            table.flowClosed(ObjectIdentifier(current))
            await current.close(graceful: false)
        }
    }

    static func localAddress(in path: NetworkPath, family: AddressFamily) -> String? {
        let candidates = path.addresses.filter { $0.family == family }
        if let primary = path.primaryInterface, let match = candidates.first(where: { $0.ifindex == primary.ifindex }) {
            return match.address
        }
        return candidates.first?.address
    }
}
