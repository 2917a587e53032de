internal import Logging
internal import NIOCore
internal import NIOPosix
internal import ResilienceCore

/// Which transport carries a request of a call's dialog (RFC 3261 §12.2.1.1 with §8.1.2).
///
/// With a route set (a proxy record-routed the dialog) the first Route names the proxy, which is
/// the registrar the account's flow already reaches: the flow carries the request. With an empty
/// route set "the UAC MUST place the remote target URI into the Request-URI", and the request goes
/// to that URI's host and port, not to the registrar (a proxy that did not record-route does not
/// route the dialog, and drops an ACK it cannot place):
/// - UDP: from the flow's own port through its socket's unconnected twin (``ContactListener``),
///   so Via and Contact stay the Contact's, and the far end's responses (from its own address, so
///   to the twin) reach the flow's transactions;
/// - TCP/TLS (or a target whose `transport` parameter asks for one): over a connection of our
///   own to the target, one per target, reused by later requests, answered on itself.
///
/// Invariants: out-of-dialog requests and non-call methods always take the flow, a CANCEL goes
/// where its INVITE went (`sendCancel` asks for the INVITE); at most
/// ``maximumDirectConnections`` connections of our own are open (the oldest is closed for a new
/// one); they close with the agent (``close()``), when their local address leaves the path
/// (``closeStaleTransports(path:)``), or when the far end closes them; a target that cannot be reached this way
/// (unparsable, a name that does not resolve, another address family, a UDP target from a stream
/// account, a connection that fails) falls back to the flow, logged.
extension SIPUserAgent {
    /// Methods whose in-dialog requests follow the dialog's route; CANCEL goes where its INVITE went.
    static let dialogRouted: Set<String> = ["INVITE", "ACK", "BYE", "UPDATE", "INFO", "PRACK", "REFER"]

    /// Connections to remote targets kept open at once.
    static let maximumDirectConnections = 8

    /// The transport for `request` (built for the dialog: Request-URI and Route already set),
    /// given the account's `flow`: the flow itself unless the request is in a call's dialog and
    /// names no Route (see the extension's invariants).
    func dialogTransport(for request: SIPMessage, over given: SIPTransport) async -> SIPTransport {
        // A transport toward one target (a re-INVITE's, whose ACK asks again) speaks for its flow.
        let flow = given.base ?? given
        guard let method = request.method?.uppercased(), Self.dialogRouted.contains(method),
            request.tag(in: "To") != nil, request.headers.values("Route").isEmpty, let uri = request.requestURI
        else { return flow }
        guard let target = RemoteTarget(uri: uri) else { return fallback(flow, uri, "unparsable remote target") }
        let kind = target.transport(from: flow.kind)
        let address: SocketAddress
        do {
            address = try await resolve(host: target.host, port: target.port)
        } catch {
            return fallback(flow, uri, "\(error)")
        }
        guard address != flow.remote else { return flow }
        if given.remote == address, given.kind == kind, given.isActive { return given }
        guard address.protocol == flow.remote.protocol else { return fallback(flow, uri, "other address family") }
        switch (kind, flow.kind) {
        case (.udp, .udp):
            return flow.toward(address) ?? fallback(flow, uri, "no contact listener")
        case (.udp, _):
            return fallback(flow, uri, "udp target from a \(flow.kind.rawValue) account")
        default:
            do {
                return try await directConnection(kind, to: address, host: target.host, from: flow)
            } catch {
                return fallback(flow, uri, "\(error)")
            }
        }
    }

    private func fallback(_ flow: SIPTransport, _ uri: String, _ reason: String) -> SIPTransport {
        throttledLog.log(
            .notice, "sip.dialog-target-unreachable",
            metadata: [
                "target": "\(LogText.escaped(uri, limit: 120))", "reason": "\(LogText.escaped(reason, limit: 120))",
            ])
        return flow
    }

    /// An IP literal as is; a name through getaddrinfo on NIO's blocking-I/O pool (as the
    /// registrar's), never on a Swift concurrency thread.
    func resolve(host: String, port: Int) async throws -> SocketAddress {
        if let literal = try? SocketAddress(ipAddress: host, port: port) { return literal }
        return try await NIOThreadPool.singleton.runIfActive {
            try SocketAddress.makeAddressResolvingHost(host, port: port)
        }
    }

    /// Our connection to `address` (opened from `flow`'s address and over its interface,
    /// ``InterfaceBinding/interface(of:toward:)``, when there is none, or the last one closed);
    /// the oldest other one is closed when ``maximumDirectConnections`` are open.
    private func directConnection(
        _ kind: SIPTransportKind, to address: SocketAddress, host: String, from flow: SIPTransport
    ) async throws -> SIPTransport {
        let local = flow.localHost
        let interface = InterfaceBinding.interface(of: flow, toward: address)
        if let kept = directConnections.first(where: { $0.address == address && $0.local == local })?.opening {
            if let open = try? await kept.value, open.isActive, open.kind == kind, open.interface == interface {
                return open
            }
            directConnections.removeAll { $0.opening == kept }
        }
        while directConnections.count >= Self.maximumDirectConnections {
            directConnections.removeFirst().close(graceful: true, table: table)
        }
        let (tls, log, user, flowTag) = (account.tls, throttledLog, account.user, flowTag)
        let layer = transactionLayer(reliable: true, provesFlow: false)
        let opening = Task {
            try await SIPTransport.open(
                kind: kind, localHost: local, interface: interface, remote: address, tls: tls,
                serverName: SIPTLS.serverName(tls, host: host), log: log, user: user, flowTag: flowTag,
                onLost: { [weak self] lost in Task { await self?.directConnectionLost(lost) } }, onPong: {},
                listen: false, inbound: layer.receive)
        }
        directConnections.append(DirectConnection(address: address, local: local, opening: opening))
        do {
            let connection = try await opening.value
            logger.info("sip.dialog-connection", metadata: ["target": "\(address)", "transport": "\(kind.rawValue)"])
            return connection
        } catch {
            directConnections.removeAll { $0.opening == opening }
            throw error
        }
    }

    /// A connection to a remote target ended under us: its transactions fail now, and the next
    /// request to that target opens a new one.
    private func directConnectionLost(_ lost: SIPTransport) async {
        table.flowClosed(ObjectIdentifier(lost))
        var gone: Set<Task<SIPTransport, any Error>> = []
        for entry in directConnections where (try? await entry.opening.value) === lost { gone.insert(entry.opening) }
        directConnections.removeAll { gone.contains($0.opening) }
    }

    /// Closes the connections to remote targets, all of them (`keeping` nil: shutdown) or those
    /// whose local address is not in `keeping` (the address left the path); never waits.
    func closeDirectConnections(keeping addresses: Set<String>? = nil) {
        let closing = directConnections.filter { addresses?.contains($0.local) != true }
        directConnections.removeAll { addresses?.contains($0.local) != true }
        for entry in closing { entry.close(graceful: addresses == nil, table: table) }
    }
}

/// A connection of our own to a dialog's remote target (see ``SIPUserAgent/dialogTransport(for:over:)``).
struct DirectConnection {
    let address: SocketAddress
    /// The local address it is opened from.
    let local: String
    let opening: Task<SIPTransport, any Error>

    /// Closes it once it is open (an opening that fails has nothing to close), and fails its
    /// transactions in `table` at once; never waits.
    func close(graceful: Bool, table: TransactionTable) {
        let opening = opening
        Task {
            guard let connection = try? await opening.value else { return }
            table.flowClosed(ObjectIdentifier(connection))
            await connection.close(graceful: graceful)
        }
    }
}

extension SIPTransport {
    /// A transport that speaks for this UDP flow to `target` from the unconnected twin of its
    /// shared socket (same port, so the same Via and Contact; see ``ContactListener``); nil for a
    /// stream or when the twin did not open.
    func toward(_ target: SocketAddress) -> SIPTransport? {
        guard kind == .udp, let twin = sharedSocket?.listener else { return nil }
        return SIPTransport(
            kind: .udp, channel: twin, localHost: localHost, interface: interface, remote: target, flowTag: flowTag,
            base: self,
            onLost: { _ in })
    }
}
