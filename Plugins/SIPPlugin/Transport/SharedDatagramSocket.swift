internal import Glibc
internal import NIOCore
internal import NIOPosix
internal import Synchronization

/// One UDP socket, bound to a local address and connected to one registrar (with an unconnected
/// twin on the same port for every other source: ``ContactListener``), carrying the flows
/// of many accounts (RFC 3261 allows it: §18.1.2 matches responses by their top Via, §18.2.1
/// hands requests on by their Request-URI). Each account's flow is a ``SIPTransport`` attached
/// here; ``DatagramRoutes`` picks the flow of each datagram.
///
/// Sends are written without a flush each and flushed once per event-loop pass, so the
/// REGISTERs of one wake-up leave in one batch (`sendmmsg`) instead of a system call each.
///
/// Reads are immediate, except while only patient exchanges (scheduled refreshes) await answers:
/// then ``ReadCoalescing`` holds each read back ``patientReadDelay`` and a pass drains up to
/// ``messagesPerRead`` datagrams, so a refresh batch's answers cost a few wake-ups.
///
/// Invariants:
/// - A datagram that matches no attached flow is dropped and counted (``dropped``), never
///   handed to another account; a malformed one is logged (rate-limited) and dropped.
/// - When the channel closes (ECONNREFUSED from the registrar's host, or the last flow
///   detached), every flow still attached is told once (`SIPTransport.socketClosed()`), and no
///   flow attaches afterwards.
final class SharedDatagramSocket: Sendable {
    let channel: any Channel
    let remote: SocketAddress
    /// The unconnected twin on the same port, for requests from other sources than the
    /// registrar (see ``ContactListener``); nil when it could not open. Closed with the socket.
    let listener: (any Channel)?
    /// The twin's door: its rate and what it refused.
    let gate: ContactGate
    private struct State {
        var routes = DatagramRoutes<SIPTransport>()
        var closed = false
        /// A flush is queued on the event loop; read and written only there.
        var flushPending = false
        var waits = AnswerWaits()
    }
    private let state = Mutex(State())
    private let droppedCount = Atomic<Int>(0)
    /// The NAT mapping seen and the STUN transactions under way (``stunBinding(timeout:clock:)``).
    let nat = Mutex(NATObservation())

    /// Datagrams read per readable event: the pacing window's largest (`PacingWindow.Settings`).
    static let messagesPerRead: UInt = 64

    /// The read buffer of every datagram: the largest message the parser accepts.
    static let readBufferSize = SIPParser.maximumMessageSize

    /// How long a read is held back while only patient exchanges await answers (see
    /// ``ReadCoalescing``): long enough for a registrar to answer a window's worth, far under T1.
    static let patientReadDelay = TimeAmount.milliseconds(20)

    /// Datagrams that matched no attached flow.
    var dropped: Int { droppedCount.load(ordering: .relaxed) }

    private init(channel: any Channel, remote: SocketAddress, listener: (any Channel)?, gate: ContactGate) {
        self.channel = channel
        self.remote = remote
        self.listener = listener
        self.gate = gate
    }

    /// Opens a socket bound to `local` (port chosen by the kernel; and to `interface` when given,
    /// ``InterfaceBinding``) and connected to `remote`, with its twin listening on the same port
    /// and interface for every other source (``ContactListener``); `onClosed` runs once when its
    /// channel has closed, after every flow was told.
    static func open(
        local: SocketAddress, interface: Int32? = nil, remote: SocketAddress, log: ThrottledLog,
        onClosed: @escaping @Sendable () -> Void
    ) -> EventLoopFuture<SharedDatagramSocket> {
        let box = SocketSlot()
        let gate = ContactGate(log: log)
        return DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bound(toInterface: interface)
            // One readable event drains a window's worth of answers (NIO's default is 4), so the
            // REGISTERs they admit leave in one flush.
            .channelOption(.maxMessagesPerRead, value: Self.messagesPerRead)
            // Whole datagrams up to the largest SIP message (RFC 3261 §18.1.1 allows 64 KB over
            // UDP): NIO's default 2,048-byte buffer cut bigger NOTIFYs and INVITEs short.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.readBufferSize))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        ReadCoalescing(delay: Self.patientReadDelay) { box.socket?.mayHoldReads ?? false },
                        DatagramInbound(log: log, stun: { box.socket?.stunReceived($0) }) {
                            box.socket?.destination(of: $0)
                        })
                }
            }
            .bind(to: local)
            .flatMap { channel in
                // The twin joins the port's reuse-port group before the connect: Linux prefers a
                // connected member for its peer only in a group it knows has connections.
                ContactListener.openTwin(of: channel, interface: interface, gate: gate) {
                    box.socket?.destination(of: $0)
                }
                .flatMap { listener in
                    channel.connect(to: remote).map {
                        let socket = SharedDatagramSocket(
                            channel: channel, remote: remote, listener: listener, gate: gate)
                        box.socket = socket
                        channel.closeFuture.whenComplete { _ in
                            listener?.close(promise: nil)
                            socket.closed()
                            onClosed()
                        }
                        return socket
                    }
                    .flatMapError { error in
                        listener?.close(promise: nil)
                        return channel.close().flatMapThrowing { throw error }
                    }
                }
            }
    }

    /// Attaches `flow` for `user`; false when the socket closed already or the tag or user is taken.
    func attach(_ flow: SIPTransport, user: String) -> Bool {
        state.withLock { state in
            !state.closed && state.routes.attach(flow, tag: flow.flowTag, user: user)
        }
    }

    /// Detaches a flow; true when it was attached.
    @discardableResult
    func detach(_ flow: SIPTransport) -> Bool {
        state.withLock { $0.routes.detach(tag: flow.flowTag) } != nil
    }

    /// The flow a parsed datagram belongs to; nil (and counted) when none is attached for it.
    func destination(of message: SIPMessage) -> SIPTransport? {
        let flow = state.withLock { $0.routes.destination(of: message) }
        if flow == nil { droppedCount.add(1, ordering: .relaxed) }
        return flow
    }

    /// Whether the socket's next read may be held back now (``AnswerWaits``).
    var mayHoldReads: Bool { state.withLock { $0.waits.mayHoldReads } }

    /// An exchange on one of this socket's flows awaits answers until the matching
    /// ``endAwaitingAnswers(patient:)``; `patient` when they may be read late.
    func beginAwaitingAnswers(patient: Bool) {
        updateWaits { $0.begin(patient: patient) }
    }

    func endAwaitingAnswers(patient: Bool) {
        updateWaits { $0.end(patient: patient) }
    }

    /// Applies `change`; a read held back that may be held no longer goes at once.
    private func updateWaits(_ change: (inout AnswerWaits) -> Void) {
        let release = state.withLock { state -> Bool in
            let held = state.waits.mayHoldReads
            change(&state.waits)
            return held && !state.waits.mayHoldReads
        }
        guard release else { return }
        let channel = channel
        channel.eventLoop.execute {
            try? channel.pipeline.syncOperations.handler(type: ReadCoalescing.self).release()
        }
    }

    /// Writes one datagram to the registrar; the write is flushed with every other write of
    /// this event-loop pass.
    ///
    /// The write and the decision to queue the pass's flush run together on the event loop, in
    /// the order the writes run there: a flush already queued then runs after this write and
    /// carries it, and a write that runs after the flush queues the next one. (Deciding on the
    /// sender's thread lost writes that reached the loop after a flush was queued but before it
    /// ran: nothing flushed them, and their senders waited for ever.) A sender already on the
    /// loop (the daemon runs its tasks there) writes at once, without a hop.
    func send(_ bytes: [UInt8]) async throws {
        let envelope = AddressedEnvelope(remoteAddress: remote, data: channel.allocator.buffer(bytes: bytes))
        let written = channel.eventLoop.makePromise(of: Void.self)
        if channel.eventLoop.inEventLoop {
            writeOnLoop(envelope, promise: written)
        } else {
            channel.eventLoop.execute { [self] in writeOnLoop(envelope, promise: written) }
        }
        try await written.futureResult.get()
    }

    /// On the event loop: writes `envelope` and queues the pass's flush unless one is queued.
    private func writeOnLoop(_ envelope: AddressedEnvelope<ByteBuffer>, promise: EventLoopPromise<Void>) {
        channel.write(envelope, promise: promise)
        let flushQueued = state.withLock { state -> Bool in
            defer { state.flushPending = true }
            return state.flushPending
        }
        guard !flushQueued else { return }
        channel.eventLoop.execute { [self] in
            state.withLock { $0.flushPending = false }
            channel.flush()
        }
    }

    /// Proves the socket alive for one of its flows (RFC 5626 keep-alive per flow, not per
    /// account): concurrent callers share one run of `ping` (the first caller's OPTIONS), and a
    /// ping answered less than `fresh` ago answers at once. `ping` runs in a task of its own, so
    /// a caller that is cancelled does not cut the others' ping short.
    func proveAlive(fresh: Duration, _ ping: @escaping @Sendable () async -> Bool) async -> Bool {
        let now = ContinuousClock.now
        let running = pingState.withLock { state -> Task<Bool, Never>? in
            if let answered = state.answeredAt, now - answered < fresh { return nil }
            if let running = state.running { return running }
            let task = Task { [self] in
                let answered = await ping()
                pingState.withLock { state in
                    state.running = nil
                    if answered { state.answeredAt = .now }
                }
                return answered
            }
            state.running = task
            return task
        }
        guard let running else { return true }
        return await running.value
    }
    private let pingState = Mutex<(running: Task<Bool, Never>?, answeredAt: ContinuousClock.Instant?)>((nil, nil))

    /// The channel closed: every attached flow hears it once.
    private func closed() {
        let flows = state.withLock { state in
            state.closed = true
            return state.routes.detachAll()
        }
        for flow in flows { flow.socketClosed() }
    }
}

/// Where the inbound handler finds its socket, which exists only once the channel is bound and
/// connected (a datagram before that finds none and is dropped).
private final class SocketSlot: Sendable {
    private let value = Mutex<SharedDatagramSocket?>(nil)
    var socket: SharedDatagramSocket? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
