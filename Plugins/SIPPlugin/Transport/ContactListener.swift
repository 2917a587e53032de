internal import Glibc
internal import Logging
internal import NIOCore
internal import NIOPosix
internal import NIOSSL
internal import Synchronization

/// What listens at an account's Contact besides its flow to the registrar, so a request sent to
/// the Contact (address, port, transport) from any source reaches the account (every phone
/// receives at its Contact: a far end's BYE straight to it, an ACK from a proxy that did not
/// record-route, an OPTIONS probe).
///
/// The Contact keeps naming the flow's own local address and port; the listener binds that same
/// port, and the kernel tells the two apart:
/// - UDP: the shared socket stays connected to the registrar (it alone gets the registrar's
///   datagrams and its ICMP port unreachable, as ECONNREFUSED); an unconnected twin shares its
///   port in one `SO_REUSEPORT` group and gets every other source's datagrams (Linux prefers the
///   connected socket for its peer once a group has connected members: the connect comes after
///   the twin joined). `SO_REUSEPORT` only admits sockets of the same user to the group. The twin
///   also sends the requests of a dialog with no route set to its remote target
///   (`SIPTransport.toward(_:)`), so their responses come back to it.
/// - TCP/TLS: the flow's connection gets `SO_REUSEADDR`, then a listening socket binds its
///   port; the registrar keeps sending over the flow (its connection reuse is unchanged), others
///   connect to the listener. A TLS listener needs a certificate: the account's
///   ``SIPTLSSettings/certificateFile`` and key; without them no TLS listener opens.
///
/// Invariants: a listener lives exactly as long as its flow or shared socket (closed with it,
/// so one bound to a vanished address goes with the stale transports); what arrives passes the
/// listener's ``ContactGate`` (rate) and ``ContactConnections`` (which connections stay) and reaches the same inbound path as the
/// flow's requests; UDP reads take whole datagrams up to ``SIPParser/maximumMessageSize``.
enum ContactListener {
    /// Datagrams read per readable event on a twin.
    static let messagesPerRead: UInt = 16

    /// `SO_REUSEPORT`, which NIO does not name.
    static let reusePort = ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT))

    /// Opens the unconnected twin of a bound, not yet connected, UDP socket: `socket` joins a
    /// reuse-port group and the twin binds its address, and its interface (`interface`, the
    /// socket's: Linux groups only sockets bound to the same one). Nil (logged) when that fails:
    /// the registrar's flows work without it.
    static func openTwin(
        of socket: any Channel, interface: Int32?, gate: ContactGate,
        destination: @escaping @Sendable (SIPMessage) -> SIPTransport?
    ) -> EventLoopFuture<(any Channel)?> {
        guard let address = socket.localAddress else { return socket.eventLoop.makeSucceededFuture(nil) }
        return socket.setOption(reusePort, value: 1).flatMap {
            DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bound(toInterface: interface)
                .channelOption(reusePort, value: 1)
                .channelOption(.maxMessagesPerRead, value: messagesPerRead)
                .channelOption(
                    .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: SIPParser.maximumMessageSize)
                )
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            DatagramInbound(log: gate.log, gate: gate, destination: destination))
                    }
                }
                .bind(to: address)
        }
        .map { Optional($0) }
        .flatMapErrorWithEventLoop { error, loop in
            gate.log.logger.warning(
                "sip.contact-listener-failed", metadata: ["address": "\(address)", "error": "\(error)"])
            return loop.makeSucceededFuture(nil)
        }
    }

    /// The certificate a TLS listener presents: the account's certificate and key; nil without
    /// them (or when they cannot be read: logged).
    static func serverContext(_ settings: SIPTLSSettings, log: ThrottledLog) -> NIOSSLContext? {
        guard let certificate = settings.certificateFile, let key = settings.keyFile else { return nil }
        do {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            configuration.minimumTLSVersion = .tlsv12
            configuration.shutdownTimeout = SIPTLS.closeNotifyWait
            return try NIOSSLContext(configuration: configuration)
        } catch {
            log.logger.warning("sip.contact-tls-unusable", metadata: ["error": "\(error)"])
            return nil
        }
    }
}

/// The listening socket at a stream flow's own address and port, with the connections it
/// accepted (see ``ContactListener``).
final class ContactStreamListener: Sendable {
    let channel: any Channel
    let gate: ContactGate
    private let accepted: AcceptedConnections

    private init(channel: any Channel, gate: ContactGate, accepted: AcceptedConnections) {
        self.channel = channel
        self.gate = gate
        self.accepted = accepted
    }

    /// Listens at `flow`'s local address and port, on `interface` (the flow's, when it is bound
    /// to one), after giving `flow` `SO_REUSEADDR`; requests go to `inbound`, answers back on
    /// their connection. Nil (logged) when it cannot listen, or for TLS without a certificate.
    static func open(
        beside flow: any Channel, interface: Int32? = nil, kind: SIPTransportKind, tls: SIPTLSSettings,
        log: ThrottledLog,
        inbound: @escaping SIPInboundHandler
    ) async -> ContactStreamListener? {
        guard let address = flow.localAddress else { return nil }
        let context = kind == .tls ? ContactListener.serverContext(tls, log: log) : nil
        if kind == .tls, context == nil {
            log.logger.notice("sip.contact-tls-no-certificate", metadata: ["address": "\(address)"])
            return nil
        }
        let gate = ContactGate(log: log)
        let accepted = AcceptedConnections()
        let callbacks = FlowCallbacks(log: log, inbound: inbound, onPong: {})
        do {
            try await flow.setOption(.socketOption(.so_reuseaddr), value: 1).get()
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bound(toInterface: interface)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelOption(.backlog, value: 16)
                .childChannelInitializer { child in
                    let source = child.remoteAddress?.ipAddress ?? "unknown"
                    guard let (id, evicted) = accepted.keep(child, source: source) else { return child.close() }
                    gate.evicted(evicted)
                    child.closeFuture.whenComplete { _ in accepted.forget(id) }
                    // A connection that says nothing holds a slot for nothing: closed after a few seconds.
                    child.eventLoop.scheduleTask(in: TimeAmount(ContactConnections.firstByteWait)) {
                        if accepted.isSilent(id) { child.close(promise: nil) }
                    }
                    return child.eventLoop.makeCompletedFuture {
                        let pipeline = child.pipeline.syncOperations
                        // StreamInbound closes the connection when this reports it idle.
                        try pipeline.addHandler(IdleStateHandler(allTimeout: ContactGate.idleConnection))
                        if let context { try pipeline.addHandler(NIOSSLServerHandler(context: context)) }
                        try pipeline.addHandler(ByteToMessageHandler(SIPFrameDecoder()))
                        try pipeline.addHandler(StreamInbound(callbacks, gate: gate) { accepted.active(id) })
                    }
                }
                .bind(to: address).get()
            return ContactStreamListener(channel: channel, gate: gate, accepted: accepted)
        } catch {
            log.logger.warning("sip.contact-listener-failed", metadata: ["address": "\(address)", "error": "\(error)"])
            return nil
        }
    }

    /// Connections open now (for tests).
    var connectionCount: Int { accepted.count }

    /// Closes the listening socket and every connection it accepted.
    func close() {
        channel.close(promise: nil)
        accepted.closeAll()
    }
}

/// The connections one stream listener accepted (which it keeps: ``ContactConnections``),
/// closed with it. Invariant: none is kept after ``closeAll()``.
private final class AcceptedConnections: Sendable {
    private struct State {
        var closed = false
        var next = 0
        var table = ContactConnections()
        var channels: [Int: any Channel] = [:]
    }
    private let state = Mutex(State())

    var count: Int { state.withLock { $0.channels.count } }

    /// Keeps `child`, from `source`: its id and the connections evicted to make room (close
    /// them); nil once the listener closed (close `child`).
    func keep(_ child: any Channel, source: String) -> (id: Int, evicted: [any Channel])? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.next += 1
            let evicted = state.table.opened(state.next, source: source, at: .now).compactMap {
                state.channels.removeValue(forKey: $0)
            }
            state.channels[state.next] = child
            return (state.next, evicted)
        }
    }

    /// Connection `id` carried a message or a keep-alive.
    func active(_ id: Int) { state.withLock { $0.table.active(id, at: .now) } }

    func isSilent(_ id: Int) -> Bool { state.withLock { $0.table.isSilent(id) } }

    func forget(_ id: Int) {
        state.withLock { state in
            state.table.closed(id)
            state.channels[id] = nil
        }
    }

    func closeAll() {
        let open = state.withLock { state in
            state.closed = true
            defer { state.channels.removeAll() }
            return Array(state.channels.values)
        }
        for channel in open { channel.close(promise: nil) }
    }
}
