import NIOCore

/// The lines of one control-socket connection, read as they arrive.
///
/// Invariants: a line is the bytes before a newline (the newline is not part of it); a line
/// longer than ``maxLine`` bytes ends the reading with ``DaemonError`` (`line too long`) before
/// more than `maxLine` bytes plus one read are held; text after the last newline counts as a
/// line at the end of the stream. A class, so the connection's one iterator is never copied (a
/// copy's end would end the stream for both).
final class ControlLineReader {
    /// The longest line the control socket takes, in bytes (every message, command or plugin).
    static let maxLine = 65536

    private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var pending = ByteBuffer()
    private var ended = false
    /// Called whenever bytes arrive (the connection table's activity stamp).
    private let activity: () -> Void

    init(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, activity: @escaping () -> Void = {}) {
        self.inbound = inbound.makeAsyncIterator()
        self.activity = activity
    }

    /// The next line; nil at the end of the stream.
    /// - Throws: ``DaemonError`` for a line over ``maxLine``; the channel's read error.
    func next() async throws -> String? {
        while true {
            if let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending.readString(length: newline - pending.readerIndex) ?? ""
                pending.moveReaderIndex(forwardBy: 1)
                pending.discardReadBytes()
                return line
            }
            guard pending.readableBytes <= Self.maxLine else { throw DaemonError("line too long") }
            if ended {
                guard pending.readableBytes > 0 else { return nil }
                defer { pending.clear() }
                return pending.readString(length: pending.readableBytes)
            }
            guard var chunk = try await inbound.next() else {
                ended = true
                continue
            }
            activity()
            pending.writeBuffer(&chunk)
        }
    }
}
