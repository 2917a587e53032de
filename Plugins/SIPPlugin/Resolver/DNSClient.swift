internal import NIOCore
internal import NIOPosix
internal import ResilienceCore
internal import Synchronization

/// Sends DNS queries over UDP, and over TCP when an answer did not fit, on NIO's event loops: no
/// thread per lookup, nothing blocks.
///
/// Invariants: each query has its own socket and a random ID, and only a response from the server
/// asked, with that ID and the question asked, is taken (RFC 5452's minimum); a query advertises
/// EDNS0 with ``DNSMessage/advertisedPayloadSize`` and a datagram is read whole (up to 65,535
/// bytes, whatever the server sent); an answer with TC set, or cut short, is asked again of the
/// same server over TCP (RFC 7766 §5: "the client SHOULD retry the query over TCP"), and when
/// TCP gives nothing the records that were whole in a TC answer are used; each try
/// waits ``ResolverConfiguration/timeout`` on the lent clock, and a lookup makes at most
/// `attempts × servers` tries; an answer that came but cannot be used (more records than
/// ``DNSMessage/maximumRecords``, malformed) is ``DNSLookupError/unusableAnswer(_:_:)``, so the
/// RFC 3263 resolver can fall back instead of failing.
struct DNSClient: Sendable {
    var configuration: ResolverConfiguration

    /// The records answering `name`/`type` (answers plus additionals); empty for NXDOMAIN or
    /// NODATA.
    /// - Throws: ``DNSLookupError`` when no server answered, or every one failed.
    func lookup(_ name: String, _ type: DNSRecordType, clock: any RuntimeClock) async throws -> [DNSRecord] {
        let query = try DNSMessage.query(id: 0, name: name, type: type)
        var lastFailure = DNSLookupError.noAnswer(name)
        for _ in 0..<configuration.attempts {
            for server in configuration.servers {
                try Task.checkCancellation()
                let id = UInt16.random(in: .min ... .max)
                var bytes = query
                bytes[0] = UInt8(id >> 8)
                bytes[1] = UInt8(id & 0xff)
                guard let address = try? SocketAddress(ipAddress: server.host, port: server.port),
                    var answer = try? await Self.ask(address, bytes, timeout: configuration.timeout, clock: clock),
                    let header = DNSMessage.header(of: answer), header.id == id
                else { continue }
                var parsed = Result { () throws(DNSParseError) in try DNSMessage(parsing: answer) }
                if header.isTruncated || parsed.isCutShort {
                    // Without an answer over TCP, the records that were whole in the datagram serve.
                    if let whole = try? await DNSStreamQuery.ask(
                        address, bytes, timeout: configuration.timeout, clock: clock),
                        DNSMessage.header(of: whole)?.id == id
                    {
                        answer = whole
                        parsed = Result { () throws(DNSParseError) in try DNSMessage(parsing: answer) }
                    } else if parsed.isCutShort {
                        continue
                    }
                }
                let message: DNSMessage
                switch parsed {
                case .success(let read): message = read
                case .failure(let error):
                    lastFailure = .unusableAnswer(name, error)
                    continue
                }
                guard
                    message.questions.first.map({ $0.name == name.lowercased().trimmingDot && $0.type == type.rawValue }
                    ) ?? false
                else { continue }
                switch message.responseCode {
                case 0: return message.answers + message.additionals
                case 3: return []
                default: lastFailure = .serverFailure(name, code: message.responseCode)
                }
            }
        }
        throw lastFailure
    }

    /// One datagram to `server` and the first datagram back from it, or nil after `timeout`.
    private static func ask(
        _ server: SocketAddress, _ query: [UInt8], timeout: Duration, clock: any RuntimeClock
    ) async throws -> [UInt8]? {
        let waiter = AnswerWaiter()
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // NIO reads 2,048 bytes by default: a longer answer would be cut, not read.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_535))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AnswerHandler(server: server, waiter: waiter))
                }
            }
            .bind(host: server.protocol == .inet6 ? "::" : "0.0.0.0", port: 0).get()
        defer { channel.close(promise: nil) }
        // Connected, so an ICMP port unreachable ends the try at once (errorCaught).
        try await channel.connect(to: server).get()
        let buffer = channel.allocator.buffer(bytes: query)
        return await waiter.answer(within: timeout, clock: clock) {
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: server, data: buffer)).whenFailure { _ in
                waiter.finish(nil)
            }
        }
    }
}

/// Why a lookup gave no records.
enum DNSLookupError: Error, Hashable, Sendable, CustomStringConvertible {
    case noAnswer(String)
    case serverFailure(String, code: UInt8)
    /// A server answered, but not with anything this resolver can read (too many records,
    /// malformed): the RFC 3263 resolver treats it as no records of that type.
    case unusableAnswer(String, DNSParseError)

    var description: String {
        switch self {
        case .noAnswer(let name): "no DNS server answered for \(LogText.escaped(name, limit: 64))"
        case .serverFailure(let name, let code): "DNS failure \(code) for \(LogText.escaped(name, limit: 64))"
        case .unusableAnswer(let name, let error):
            "unusable DNS answer for \(LogText.escaped(name, limit: 64)) (\(error))"
        }
    }
}

extension Result where Failure == DNSParseError {
    /// The message ended before its counts said: a datagram cut by its sender or by a read.
    fileprivate var isCutShort: Bool {
        guard case .failure(.truncatedMessage) = self else { return false }
        return true
    }
}

/// The one answer of one query: whichever of the answer and the timeout comes first resumes
/// the waiting task, once.
final class AnswerWaiter: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<[UInt8]?, Never>?, early: [UInt8]??)>((nil, nil))

    func wait(_ continuation: CheckedContinuation<[UInt8]?, Never>) {
        let early = state.withLock { state -> [UInt8]?? in
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Calls `send`, then waits for ``finish(_:)``, at most `timeout` on `clock` (then nil).
    func answer(
        within timeout: Duration, clock: any RuntimeClock, send: @escaping @Sendable () -> Void
    ) async -> [UInt8]? {
        let timer = Task {
            try? await clock.sleep(for: timeout)
            self.finish(nil)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                wait(continuation)
                send()
            }
        } onCancel: {
            finish(nil)
        }
    }

    func finish(_ answer: [UInt8]?) {
        let continuation = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            guard state.early == nil else { return nil }
            state.early = .some(answer)
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: answer)
    }
}

private final class AnswerHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let server: SocketAddress
    let waiter: AnswerWaiter

    init(server: SocketAddress, waiter: AnswerWaiter) {
        self.server = server
        self.waiter = waiter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Only the server asked may answer (a spoofed source is the attacker's problem to guess).
        guard envelope.remoteAddress == server else { return }
        waiter.finish(Array(envelope.data.readableBytesView.prefix(65535)))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ECONNREFUSED (ICMP port unreachable): no server there; the next one is tried at once.
        waiter.finish(nil)
    }
}

extension String {
    /// Without one trailing dot (`example.com.` → `example.com`).
    var trimmingDot: String { hasSuffix(".") ? String(dropLast()) : self }
}
