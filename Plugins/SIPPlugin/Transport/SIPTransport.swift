internal import Glibc
internal import Logging
internal import NIOCore
internal import NIOPosix
internal import NIOSSL
internal import ResilienceCore
internal import Synchronization

/// The transport protocol of an account.
public enum SIPTransportKind: String, Hashable, Sendable, Codable, CaseIterable {
    case udp
    case tcp
    /// TCP with TLS (RFC 3261 §26, `sips:`); see ``SIPTLSSettings``.
    case tls

    var viaName: String { rawValue.uppercased() }

    /// A byte stream (TCP or TLS): framed, kept alive with CRLF pings, never retransmitted.
    var isStream: Bool { self != .udp }

    /// The registrar port when none is given: 5061 for TLS, else 5060.
    public var defaultPort: Int { self == .tls ? 5061 : 5060 }
}

/// What a transport hands upward: one parsed message and a way to answer on the same flow.
typealias SIPInboundHandler = @Sendable (SIPMessage, _ reply: @escaping @Sendable (SIPMessage) -> Void) -> Void

/// One flow to the registrar: an account's share of a UDP socket (``SharedDatagramSocket``,
/// one per local address and registrar, see ``DatagramFlowHub``), or a TCP (or TLS over TCP)
/// connection of its own bound to one local address. A TLS flow is returned only once its
/// handshake verified the registrar.
///
/// Malformed input is logged and dropped (UDP) or closes the connection (TCP, where framing is
/// lost); the owner opens a new transport on the next request, so nothing wedges.
///
/// The UDP socket is connected to the registrar, so the kernel hands it ICMP port-unreachable as
/// ECONNREFUSED and only the registrar's datagrams arrive; ECONNREFUSED closes the socket and so
/// every flow on it. Requests from any other source reach the flow at its Contact (the same
/// address and port) through a listener beside it (``ContactListener``), rate-limited by its
/// ``ContactGate``, into the same inbound handler.
///
/// Every branch this flow makes (``newBranch()``) starts with its ``flowTag``, so the responses
/// on a shared socket find their flow.
///
/// Invariant: `onLost` runs exactly once for a flow that ended without the owner's ``close()``
/// (server FIN/RST, ECONNREFUSED, broken framing, ``abandon()``) and never after ``close()``.
final class SIPTransport: Sendable {
    let kind: SIPTransportKind
    let channel: any Channel
    /// The bound local address as text, without port (what Contact and Via carry).
    let localHost: String
    /// The interface the flow's sockets are bound to (``InterfaceBinding``); nil: none, the
    /// kernel's route decides.
    let interface: Int32?
    let localPort: Int
    let remote: SocketAddress
    /// Starts every Via branch of this flow: the account's tag, the same on each of its flows (a
    /// response to a request of an earlier flow, a CANCEL's, still finds the account); unique
    /// among the flows of a socket.
    let flowTag: String
    /// The UDP socket this flow shares, with the hub's entry; nil for a stream.
    private let share: (socket: SharedDatagramSocket, hub: DatagramFlowHub, entry: UInt64, user: String)?
    private let onLost: @Sendable (SIPTransport) -> Void
    /// What listens at this stream flow's address and port for other sources (nil for UDP,
    /// whose shared socket has its own, or when none could open; see ``ContactListener``).
    let listener: ContactStreamListener?
    /// Set on a UDP transport that speaks for `base` from its socket's unconnected twin, writing
    /// every datagram to ``remote`` (a dialog's remote target, ``SIPTransport/toward(_:)``).
    let base: SIPTransport?
    private enum Life { case open, closedByOwner, lost }
    private let life = Mutex(Life.open)

    init(
        kind: SIPTransportKind, channel: any Channel, localHost: String, interface: Int32? = nil, remote: SocketAddress,
        flowTag: String,
        share: (socket: SharedDatagramSocket, hub: DatagramFlowHub, entry: UInt64, user: String)? = nil,
        listener: ContactStreamListener? = nil, base: SIPTransport? = nil,
        onLost: @escaping @Sendable (SIPTransport) -> Void
    ) {
        self.base = base
        self.listener = listener
        self.kind = kind
        self.channel = channel
        self.localHost = localHost
        self.interface = interface
        self.localPort = channel.localAddress?.port ?? 0
        self.remote = remote
        self.share = share
        self.onLost = onLost
        self.flowTag = flowTag
    }

    /// The UDP socket this flow shares; nil for a stream.
    var sharedSocket: SharedDatagramSocket? { share?.socket }

    var isActive: Bool { channel.isActive && life.withLock { $0 == .open } && base?.isActive != false }

    /// The flow whose closing ends this transport's client transactions: its ``base``, or itself.
    var transactionFlow: ObjectIdentifier { ObjectIdentifier(base ?? self) }

    /// `host:port` for Via and Contact, with brackets around IPv6.
    var sentBy: String { "\(formatHost(localHost)):\(localPort)" }

    /// A random flow tag: 8 hex digits.
    static func newFlowTag() -> String { String(randomToken().prefix(8)) }

    /// A new branch (RFC 3261 §8.1.1.7) carrying this flow's tag.
    func newBranch() -> String { "\(DatagramRoutes<SIPTransport>.magicCookie)\(flowTag).\(randomToken())" }

    /// A Via for a new request on this flow (a new branch, `rport` asked for).
    func newVia() -> String { "SIP/2.0/\(kind.viaName) \(sentBy);rport;branch=\(newBranch())" }

    /// Opens a flow bound to `localHost` (port chosen by the kernel) and connected to `remote`.
    /// `onLost` gets the flow when it ends without ``close()``.
    /// `log` takes the warnings a peer can provoke (malformed input), rate-limited.
    /// - Parameters:
    ///   - interface: the interface every socket of the flow is bound to (``InterfaceBinding``),
    ///     so it leaves over the link the path chose; nil leaves the route to the kernel.
    ///   - user: the account's user: requests for it on a shared UDP socket come to this flow.
    ///   - flowTag: starts the flow's branches (``flowTag``); nil for a random one.
    ///   - flows: where a UDP flow finds its socket (shared with the other accounts of the same
    ///     hub, local address and registrar); nil gives the flow a socket of its own.
    /// - Throws: ``SIPTLSFailure`` when the registrar's certificate is refused (permanent).
    static func open(
        kind: SIPTransportKind, localHost: String, interface: Int32? = nil, remote: SocketAddress,
        tls: SIPTLSSettings = SIPTLSSettings(), serverName: String? = nil, log: ThrottledLog, user: String = "",
        flowTag: String? = nil,
        flows: DatagramFlowHub? = nil,
        onLost: @escaping @Sendable (SIPTransport) -> Void, onPong: @escaping @Sendable () -> Void,
        listen: Bool = true, inbound: @escaping SIPInboundHandler
    ) async throws -> SIPTransport {
        let callbacks = FlowCallbacks(log: log, inbound: inbound, onPong: onPong)
        let flowTag = flowTag ?? Self.newFlowTag()
        if kind == .udp {
            return try await openDatagram(
                localHost: localHost, interface: interface, remote: remote, user: user, flowTag: flowTag,
                hub: flows ?? DatagramFlowHub(log: log), callbacks: callbacks, onLost: onLost)
        }
        let local = try SocketAddress(ipAddress: localHost, port: 0)
        let group = MultiThreadedEventLoopGroup.singleton
        let channel: any Channel
        let context = kind == .tls ? try SIPTLS.context(tls) : nil
        // Created only for TLS, and completed on every path (NIO traps on a leaked promise).
        let handshake = context.map { _ in group.any().makePromise(of: Void.self) }
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.seconds(5))
                .bound(toInterface: interface)
                .bind(to: local)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        if let context, let handshake {
                            try pipeline.addHandler(TLSAbortHandler())
                            try pipeline.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                            try pipeline.addHandler(TLSHandshakeWaiter(done: handshake, expectedName: serverName))
                        }
                        try addStreamHandlers(to: pipeline, callbacks)
                    }
                }
                .connect(to: remote).get()
        } catch {
            handshake?.fail(error)
            throw error
        }
        if let handshake {
            try await SIPTLS.verify(
                channel, handshake: handshake, local: local, interface: interface, remote: remote,
                serverName: serverName, tls: tls)
        }
        let listener =
            listen
            ? await ContactStreamListener.open(
                beside: channel, interface: interface, kind: kind, tls: tls, log: log, inbound: inbound) : nil
        let transport = SIPTransport(
            kind: kind, channel: channel, localHost: localHost, interface: interface, remote: remote,
            flowTag: flowTag, listener: listener, onLost: onLost)
        channel.closeFuture.whenComplete { [transport] _ in transport.end(as: .lost) }
        return transport
    }

    /// A UDP flow: `user`'s share of the hub's socket for this local address and registrar.
    private static func openDatagram(
        localHost: String, interface: Int32?, remote: SocketAddress, user: String, flowTag: String,
        hub: DatagramFlowHub, callbacks: FlowCallbacks, onLost: @escaping @Sendable (SIPTransport) -> Void
    ) async throws -> SIPTransport {
        let (socket, entry) = try await hub.socket(for: user, local: localHost, interface: interface, remote: remote)
        let transport = SIPTransport(
            kind: .udp, channel: socket.channel, localHost: localHost, interface: interface, remote: remote,
            flowTag: flowTag, share: (socket, hub, entry, user), onLost: onLost)
        transport.callbacks.withLock { $0 = callbacks }
        guard socket.attach(transport, user: user) else {
            hub.release(user: user, from: entry)
            throw PluginError("udp socket from \(localHost) closed while the flow was opening")
        }
        return transport
    }

    /// What a shared socket hands this flow's datagrams to (set once, before it is attached).
    let callbacks = Mutex<FlowCallbacks?>(nil)

    /// Ends the flow once: `.lost` reports it through `onLost`, `.closedByOwner` does not; a
    /// shared flow leaves its socket either way.
    private func end(as ending: Life) {
        let first = life.withLock { life -> Bool in
            guard life == .open else { return false }
            life = ending
            return true
        }
        guard first else { return }
        listener?.close()
        if let share {
            share.socket.detach(self)
            share.hub.release(user: share.user, from: share.entry)
        }
        if ending == .lost { onLost(self) }
    }

    /// The shared socket closed under this flow.
    func socketClosed() { end(as: .lost) }

    func send(_ message: SIPMessage) async throws {
        try await send(bytes: message.serialized())
    }

    func send(bytes: [UInt8]) async throws {
        if let share {
            guard isActive else { throw ChannelError.ioOnClosedChannel }
            try await share.socket.send(bytes)
            return
        }
        if base != nil {
            guard isActive else { throw ChannelError.ioOnClosedChannel }
            let envelope = AddressedEnvelope(remoteAddress: remote, data: channel.allocator.buffer(bytes: bytes))
            try await channel.writeAndFlush(envelope)
            return
        }
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    /// Closes the flow on the owner's behalf (address change, shutdown): not a loss.
    /// - Parameter graceful: false for a flow whose local address vanished: a TLS flow then
    ///   closes its connection at once instead of waiting for a close_notify that cannot come.
    func close(graceful: Bool = true) async {
        end(as: .closedByOwner)
        // The hub closes a shared socket (and its twin) when its last flow left.
        guard share == nil, base == nil else { return }
        if !graceful, kind == .tls {
            try? await channel.triggerUserOutboundEvent(TLSAbortHandler.Abort()).get()
        }
        try? await channel.close()
    }

    /// Ends a flow the owner found dead (flow ping unanswered): reported as lost. A shared
    /// socket stays open for its other flows; the account's next flow joins it afresh.
    func abandon() async {
        guard share == nil, base == nil else { return end(as: .lost) }
        try? await channel.close()
    }
}

func formatHost(_ host: String) -> String {
    host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
}
