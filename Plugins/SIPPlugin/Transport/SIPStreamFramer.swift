/// Cuts SIP messages out of a byte stream (TCP) by `Content-Length` (RFC 3261 §18.3).
///
/// Pure and synchronous so it is tested without sockets; `SIPFrameDecoder` wraps it for NIO.
/// A stream that breaks framing cannot be resynchronised: the caller closes the connection.
public enum SIPStreamFramer {
    public enum Frame: Equatable, Sendable {
        /// More bytes are needed.
        case needMoreData
        /// Bare CRLFs between messages (RFC 5626 keep-alive pong or ping); skip them.
        case keepAlive(consumed: Int)
        case message(SIPMessage, consumed: Int)
    }

    /// Looks for the next frame at the start of `bytes`.
    /// - Throws: ``SIPParseError`` when the stream is malformed (no Content-Length, bad value,
    ///   header section too large).
    public static func next(_ bytes: [UInt8]) throws(SIPParseError) -> Frame {
        var skip = 0
        while skip < bytes.count, bytes[skip] == 13 || bytes[skip] == 10 { skip += 1 }
        if skip > 0 { return .keepAlive(consumed: skip) }
        guard let end = SIPParser.headerEnd(bytes) else {
            if bytes.count > SIPParser.maximumMessageSize {
                throw SIPParseError("no end of headers within 64 KiB")
            }
            return .needMoreData
        }
        var message = try SIPParser.parseHead(bytes[..<end.headerLength])
        guard let length = try SIPParser.contentLength(message.headers) else {
            throw SIPParseError("missing Content-Length on a stream transport")
        }
        let total = end.bodyStart + length
        guard total <= bytes.count else { return .needMoreData }
        message.body = Array(bytes[end.bodyStart..<total])
        return .message(message, consumed: total)
    }
}
