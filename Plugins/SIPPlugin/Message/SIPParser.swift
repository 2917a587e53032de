/// Why a message was rejected; the transport logs `reason` and drops the input.
public struct SIPParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: String
    /// For a head that broke only a bound the parser keeps (more than
    /// ``SIPParser/maximumHeaderCount`` header lines): its start line with just the headers needed
    /// to answer it and to find its end (``SIPParser/answerHeaders``). The transport answers such
    /// a request 400 and, on a stream, skips it and keeps the connection. nil for every other error.
    public var boundedHead: SIPMessage?
    public init(_ reason: String, boundedHead: SIPMessage? = nil) {
        self.reason = reason
        self.boundedHead = boundedHead
    }
    public var description: String { reason }
}

/// Parses one SIP message from bytes (RFC 3261 §7); never traps on any input.
///
/// Accepts CRLF or bare LF line ends, folded header lines (a line starting with SP or HTAB
/// continues the previous one), case-insensitive and compact header names.
public enum SIPParser {
    /// The largest message accepted (header section plus body).
    public static let maximumMessageSize = 65_536
    public static let maximumHeaderCount = 256
    /// The headers kept of a head with too many lines: enough to answer it (RFC 3261 §8.2.6.2)
    /// and to frame it on a stream (canonical names, see ``SIPHeaders/canonical(_:)``).
    public static let answerHeaders: Set<String> = ["via", "from", "to", "call-id", "cseq", "content-length"]

    /// Parses a complete datagram: the body is what `Content-Length` says, or the rest of the
    /// datagram when it is absent (RFC 3261 §18.3); a longer `Content-Length` is an error.
    public static func parse(datagram bytes: [UInt8]) throws(SIPParseError) -> SIPMessage {
        guard bytes.count <= maximumMessageSize else { throw SIPParseError("message larger than 64 KiB") }
        guard let end = headerEnd(bytes) else { throw SIPParseError("truncated: no empty line after headers") }
        var message = try parseHead(bytes[..<end.headerLength])
        let available = bytes.count - end.bodyStart
        if let length = try contentLength(message.headers) {
            guard length <= available else {
                throw SIPParseError("truncated body: Content-Length \(length), \(available) bytes present")
            }
            message.body = Array(bytes[end.bodyStart..<(end.bodyStart + length)])
        } else {
            message.body = Array(bytes[end.bodyStart...])
        }
        return message
    }

    /// Where the header section ends: its length (without the empty line) and where the body starts.
    static func headerEnd(_ bytes: [UInt8]) -> (headerLength: Int, bodyStart: Int)? {
        bytes.withUnsafeBytes { headerEnd(in: $0, from: 0) }
    }

    /// The first LF LF or LF CR LF in `bytes` at or after `from` (the empty line that ends the
    /// headers): the header section's length and where the body starts.
    static func headerEnd(in bytes: UnsafeRawBufferPointer, from: Int) -> (headerLength: Int, bodyStart: Int)? {
        var i = max(0, from)
        while i < bytes.count {
            if bytes[i] == 10 {
                if i + 1 < bytes.count, bytes[i + 1] == 10 { return (i, i + 2) }
                if i + 2 < bytes.count, bytes[i + 1] == 13, bytes[i + 2] == 10 { return (i, i + 3) }
            }
            i += 1
        }
        return nil
    }

    /// The `Content-Length` value; nil when absent; an error when not a plain decimal number.
    static func contentLength(_ headers: SIPHeaders) throws(SIPParseError) -> Int? {
        let values = headers.values("Content-Length")
        guard let raw = values.first else { return nil }
        guard values.allSatisfy({ $0 == raw }) else { throw SIPParseError("conflicting Content-Length headers") }
        guard !raw.isEmpty, raw.count <= 6, raw.allSatisfy(\.isASCIIDigit), let value = Int(raw) else {
            throw SIPParseError("bad Content-Length '\(raw.prefix(20))'")
        }
        guard value <= maximumMessageSize else { throw SIPParseError("Content-Length \(value) too large") }
        return value
    }

    /// Parses the start line and headers (without the terminating empty line).
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(SIPParseError) -> SIPMessage {
        // Split on bytes: in a Swift String "\r\n" is one Character and would not split at "\n".
        var lines: [String] = []
        for rawLine in bytes.split(separator: 10, omittingEmptySubsequences: false) {
            var lineBytes = rawLine
            if lineBytes.last == 13 { lineBytes.removeLast() }
            guard let line = String(validating: lineBytes, as: UTF8.self) else {
                throw SIPParseError("header section is not valid UTF-8")
            }
            if let first = line.first, first == " " || first == "\t" {
                guard lines.count > 1 else { throw SIPParseError("continuation line before any header") }
                lines[lines.count - 1] += " " + line.trimmingSIPWhitespace()
            } else {
                lines.append(line)
            }
        }
        // Tolerate leading empty lines (RFC 3261 §7.5: ignore CRLF before the start line).
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard let startText = lines.first else { throw SIPParseError("empty message") }
        let startLine = try parseStartLine(startText)
        let tooMany = lines.count - 1 > maximumHeaderCount
        var headers = SIPHeaders()
        for line in lines.dropFirst() {
            if tooMany {
                // Bounded work: one scan for a colon per line of a head already within 64 KiB.
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = String(line[..<colon]).trimmingSIPWhitespace()
                guard answerHeaders.contains(SIPHeaders.canonical(name)) else { continue }
                headers.add(name, String(line[line.index(after: colon)...]).trimmingSIPWhitespace())
                continue
            }
            guard let colon = line.firstIndex(of: ":") else {
                throw SIPParseError("header line without colon: '\(line.prefix(40))'")
            }
            let name = String(line[..<colon]).trimmingSIPWhitespace()
            guard !name.isEmpty, name.allSatisfy(\.isSIPTokenCharacter) else {
                throw SIPParseError("bad header name '\(name.prefix(40))'")
            }
            headers.add(name, String(line[line.index(after: colon)...]).trimmingSIPWhitespace())
        }
        guard !tooMany else {
            throw SIPParseError(
                "too many header lines", boundedHead: SIPMessage(startLine: startLine, headers: headers))
        }
        return SIPMessage(startLine: startLine, headers: headers)
    }

    static func parseStartLine(_ line: String) throws(SIPParseError) -> SIPMessage.StartLine {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        if line.hasPrefix("SIP/") {
            guard parts.count >= 2, parts[0] == "SIP/2.0" else { throw SIPParseError("bad status line") }
            guard parts[1].count == 3, let status = Int(parts[1]), (100...699).contains(status) else {
                throw SIPParseError("bad status code '\(parts[1].prefix(10))'")
            }
            return .response(status: status, reason: parts.count > 2 ? parts[2] : "")
        }
        guard parts.count == 3, parts[2] == "SIP/2.0" else { throw SIPParseError("bad request line") }
        guard !parts[0].isEmpty, parts[0].allSatisfy(\.isSIPTokenCharacter) else {
            throw SIPParseError("bad method")
        }
        guard !parts[1].isEmpty, !parts[1].contains(" ") else { throw SIPParseError("bad Request-URI") }
        return .request(method: parts[0], uri: parts[1])
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }

    /// RFC 3261 `token` characters.
    var isSIPTokenCharacter: Bool {
        guard isASCII, let scalar = unicodeScalars.first else { return false }
        if ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) {
            return true
        }
        return "-.!%*_+`'~".unicodeScalars.contains(scalar)
    }
}
