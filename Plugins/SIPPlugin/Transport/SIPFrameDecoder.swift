public import NIOCore

/// One unit cut from a SIP byte stream.
public enum SIPStreamFrame: Hashable, Sendable {
    case message(SIPMessage)
    /// One CRLF (or bare LF) between messages: RFC 5626 §4.4.1's pong to a flow ping.
    case pong
    /// A message whose framing is intact but whose head broke a bound (too many header lines):
    /// the head as ``SIPParseError/boundedHead`` keeps it, body skipped. A request is answered
    /// 400 and the connection stays: one hostile message must not cost the account its flow.
    case refused(SIPMessage, reason: String)
}

/// Cuts SIP messages out of a byte stream (TCP, and TLS behind its handler) by
/// `Content-Length` (RFC 3261 §18.3), scanning the `ByteBuffer` in place.
///
/// The pure entry point is ``decode(buffer:)``: it never copies the unread bytes on a read that
/// cannot finish a frame; the search for the end of the header section resumes where the last
/// one stopped (as NIO's `LineBasedFrameDecoder` does), and a header section is parsed once
/// even when its body arrives in many reads. The bytes of a finished message are copied once.
///
/// Invariants: the frames produced do not depend on how the stream was split into reads; a
/// header section longer than ``SIPParser/maximumMessageSize`` without its empty line, a
/// missing or malformed `Content-Length`, or a malformed head throws ``SIPParseError``; a head
/// with too many header lines but a readable `Content-Length` is skipped whole, as a
/// ``SIPStreamFrame/refused(_:reason:)`` frame. A
/// stream that broke framing cannot be resynchronised: the pipeline closes the connection.
/// A CR not followed by LF between messages is dropped.
public struct SIPFrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = SIPStreamFrame

    /// How many readable bytes were searched for the end of headers without finding it.
    private var scannedBytes = 0
    /// A parsed head whose body has not fully arrived, with where the body starts and its length.
    private var pendingHead: Head?

    /// A parsed head, where its body starts and how long it is; `refused` says why it is skipped.
    private struct Head {
        var message: SIPMessage
        var bodyStart: Int
        var bodyLength: Int
        var refused: String?
    }

    public init() {}

    public mutating func decode(buffer: inout ByteBuffer) throws(SIPParseError) -> SIPStreamFrame? {
        if pendingHead == nil {
            if let pong = Self.pong(in: &buffer) {
                // The scan offset counted from the old reader index.
                scannedBytes = 0
                return pong
            }
            guard buffer.readableBytes > 0 else { return nil }
            guard let head = try parseHead(in: buffer) else { return nil }
            pendingHead = head
        }
        guard let pending = pendingHead, buffer.readableBytes >= pending.bodyStart + pending.bodyLength else {
            return nil
        }
        var message = pending.message
        if pending.refused == nil {
            message.body =
                buffer.getBytes(at: buffer.readerIndex + pending.bodyStart, length: pending.bodyLength) ?? []
        }
        buffer.moveReaderIndex(forwardBy: pending.bodyStart + pending.bodyLength)
        pendingHead = nil
        scannedBytes = 0
        if let reason = pending.refused { return .refused(message, reason: reason) }
        return .message(message)
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws(SIPParseError)
        -> SIPStreamFrame?
    {
        try decode(buffer: &buffer)
    }

    /// Consumes one pong (CRLF or LF) at the reader index, and any CRs that precede something else.
    private static func pong(in buffer: inout ByteBuffer) -> SIPStreamFrame? {
        while let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) {
            if first == 10 {
                buffer.moveReaderIndex(forwardBy: 1)
                return .pong
            }
            guard first == 13 else { return nil }
            guard let second = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) else { return nil }
            buffer.moveReaderIndex(forwardBy: second == 10 ? 2 : 1)
            if second == 10 { return .pong }
        }
        return nil
    }

    /// Finds the end of the header section, resuming the scan, and parses the head once found.
    private mutating func parseHead(in buffer: ByteBuffer) throws(SIPParseError) -> Head? {
        // Back off two bytes so a terminator split across reads is still found.
        let from = max(0, scannedBytes - 2)
        let end = buffer.withUnsafeReadableBytes { SIPParser.headerEnd(in: $0, from: from) }
        guard let end else {
            scannedBytes = buffer.readableBytes
            if scannedBytes > SIPParser.maximumMessageSize {
                throw SIPParseError("no end of headers within 64 KiB")
            }
            return nil
        }
        guard end.headerLength <= SIPParser.maximumMessageSize else {
            throw SIPParseError("header section larger than 64 KiB")
        }
        let headBytes = buffer.getBytes(at: buffer.readerIndex, length: end.headerLength) ?? []
        var message: SIPMessage
        var refused: String?
        do {
            message = try SIPParser.parseHead(headBytes[...])
        } catch {
            guard let head = error.boundedHead else { throw error }
            (message, refused) = (head, error.reason)
        }
        guard let length = try SIPParser.contentLength(message.headers) else {
            throw SIPParseError("missing Content-Length on a stream transport")
        }
        return Head(message: message, bodyStart: end.bodyStart, bodyLength: length, refused: refused)
    }
}

extension SIPMessage {
    /// The 400 that answers a request whose head broke a parser bound (``SIPParseError/boundedHead``);
    /// nil for a response or an ACK, which are never answered (RFC 3261 §17.2.3).
    var boundedAnswer: SIPMessage? {
        guard let method = method?.uppercased(), method != "ACK", headers["Via"] != nil, headers["CSeq"] != nil
        else { return nil }
        return makeResponse(status: 400, reason: "Too Many Header Lines", toTag: randomToken())
    }
}
