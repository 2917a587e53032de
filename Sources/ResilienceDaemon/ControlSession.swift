import NIOCore

/// A long-lived exchange on the control socket (an external plugin, an event subscriber, a push
/// handler that keeps its connection): the client's lines in, the daemon's lines out, both as
/// JSON lines of the external plugin protocol.
///
/// Invariants:
/// - Sending never waits: ``send(_:)`` queues the line in a ``BoundedLineQueue`` of
///   ``outgoingCapacity`` lines that one writer drains at the client's pace; a client that does
///   not read loses lines (counted, marked with a `dropped` message), never the daemon's time or
///   memory.
/// - A session is exempt from the control socket's idle timeout and from the eviction of idle
///   connections; the number of sessions open at once is bounded by the server
///   (``ControlServer/Limits/maxSessions``).
/// - ``close()`` ends the session: queued lines are still written, then the connection closes.
public final class ControlSession: Sendable {
    /// The most lines waiting for a client that does not read.
    public static let outgoingCapacity = 1024

    /// Who connected, as the kernel saw it (nil when the credentials could not be read).
    public let peer: ControlAccess.Peer?
    let outgoing: BoundedLineQueue

    init(peer: ControlAccess.Peer?, droppedLine: @escaping @Sendable (Int) -> String) {
        self.peer = peer
        self.outgoing = BoundedLineQueue(capacity: Self.outgoingCapacity, droppedLine: droppedLine)
    }

    /// Queues one line (without its newline) for the client; false when it was dropped (the
    /// client is that far behind) or the session has ended.
    @discardableResult
    public func send(_ line: String) -> Bool { outgoing.push(line) }

    /// Ends the session once what is queued is written.
    public func close() { outgoing.finish() }

    /// Lines dropped for this client so far.
    public var droppedTotal: Int { outgoing.droppedTotal }

    /// Writes queued lines until the queue ends or the connection fails.
    func drain(to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async {
        while let line = await outgoing.next() {
            do {
                try await outbound.write(ByteBuffer(string: line + "\n"))
            } catch {
                outgoing.finish()
                return
            }
        }
    }
}

/// What serves a control-socket session once its first line opened it.
public struct ControlSessionHandler: Sendable {
    /// Whether a first line opens a session (instead of a one-reply command).
    public var opens: @Sendable (String) -> Bool
    /// The `dropped` marker for `count` lines a slow client lost.
    public var droppedLine: @Sendable (Int) -> String
    /// Serves the session: `first` is the opening line, `lines` yields the client's next lines
    /// (nil at its end); the session ends when this returns.
    public var serve: @Sendable (_ first: String, _ lines: ControlSessionLines, _ session: ControlSession) async -> Void

    public init(
        opens: @escaping @Sendable (String) -> Bool, droppedLine: @escaping @Sendable (Int) -> String,
        serve: @escaping @Sendable (String, ControlSessionLines, ControlSession) async -> Void
    ) {
        self.opens = opens
        self.droppedLine = droppedLine
        self.serve = serve
    }
}

/// The client's lines of one session, each at most ``ControlLineReader/maxLine`` bytes.
public final class ControlSessionLines {
    private let reader: ControlLineReader

    init(_ reader: ControlLineReader) { self.reader = reader }

    /// The next line; nil when the client closed, sent a line too long or the connection failed.
    public func next() async -> String? {
        do {
            return try await reader.next()
        } catch {
            return nil
        }
    }
}
