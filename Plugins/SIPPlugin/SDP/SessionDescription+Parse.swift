internal import ResilienceCore

extension SessionDescription {
    /// Parses an SDP body; never traps on any input (a fuzz target calls this).
    ///
    /// Defensive by design: at most ``maximumSize`` bytes and ``maximumLineCount`` lines, numbers
    /// read digit by digit with a length bound before any arithmetic, ports and payload types
    /// range-checked, at most ``maximumMediaCount`` media sections. CRLF or bare LF line ends.
    /// Unknown line types and attributes are skipped (RFC 8866 §5: an agent ignores what it does
    /// not understand); `v`, `o`, `s` and `t` are required, each media section needs a
    /// connection (its own or the session's).
    /// - Throws: ``SDPError`` naming the line, the field and what was wrong.
    public static func parse(_ text: String) throws(SDPError) -> SessionDescription {
        try parse(Array(text.utf8))
    }

    /// Parses SDP bytes, as they arrive in a SIP body.
    public static func parse(_ bytes: [UInt8]) throws(SDPError) -> SessionDescription {
        guard bytes.count <= maximumSize else {
            throw SDPError(line: 0, field: "body", "larger than \(maximumSize) bytes")
        }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw SDPError(line: 0, field: "body", "not UTF-8")
        }
        var reader = SDPReader()
        var number = 0
        // Split bytes, not Characters: in a String "\r\n" is one Character.
        for raw in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            number += 1
            guard number <= maximumLineCount else {
                throw SDPError(line: number, field: "body", "more than \(maximumLineCount) lines")
            }
            let line = raw.last == 0x0D ? raw.dropLast() : raw
            if line.isEmpty { continue }
            try reader.read(Substring(String(decoding: line, as: UTF8.self)), at: number)
        }
        return try reader.finish(lines: number)
    }
}

/// The parser's state between lines: what has been seen and the media section being filled.
private struct SDPReader {
    var version = false
    var origin: SessionDescription.Origin?
    var sessionName: String?
    var timing: (UInt64, UInt64)?
    var connection: SessionDescription.Connection?
    var direction: SessionDescription.Direction?
    var media: [SessionDescription.Media] = []

    mutating func read(_ line: Substring, at number: Int) throws(SDPError) {
        guard line.count >= 2, line.dropFirst().first == "=", let type = line.first else {
            throw SDPError(line: number, field: "line", "not <type>=<value>: \(escaped(line))")
        }
        let value = line.dropFirst(2)
        switch type {
        case "v":
            guard value == "0" else { throw SDPError(line: number, field: "v", "version \(escaped(value)), not 0") }
            version = true
        case "o": origin = try Self.origin(value, at: number)
        // An empty name is written back as "-" (RFC 8866 §5.3), so read it as that.
        case "s": sessionName = value.isEmpty ? "-" : String(value.prefix(256))
        case "t":
            let parts = value.split(separator: " ")
            guard parts.count == 2, let start = Self.number(parts[0]), let stop = Self.number(parts[1]) else {
                throw SDPError(line: number, field: "t", "not <start> <stop>: \(escaped(value))")
            }
            timing = (start, stop)
        case "c":
            let parsed = try Self.connection(value, at: number)
            if media.isEmpty { connection = parsed } else { media[media.count - 1].connection = parsed }
        case "m": try addMedia(value, at: number)
        case "a": try attribute(value, at: number)
        default: break  // b=, i=, u=, e=, p=, k=, z=, r=: not needed by a VoIP client
        }
    }

    mutating func addMedia(_ value: Substring, at number: Int) throws(SDPError) {
        guard media.count < SessionDescription.maximumMediaCount else {
            throw SDPError(line: number, field: "m", "more than \(SessionDescription.maximumMediaCount) media sections")
        }
        let parts = value.split(separator: " ")
        guard parts.count >= 4 else { throw SDPError(line: number, field: "m", "not <media> <port> <proto> <fmt>...") }
        // `port/count` (RFC 8866 §5.14) keeps the first port.
        let portText = parts[1].split(separator: "/", omittingEmptySubsequences: false)[0]
        guard let port = Self.number(portText), port <= 65_535 else {
            throw SDPError(line: number, field: "m", "port \(escaped(parts[1])) not in 0...65535")
        }
        let formats = parts.dropFirst(3)
        guard formats.count <= SessionDescription.maximumFormatCount else {
            throw SDPError(line: number, field: "m", "more than \(SessionDescription.maximumFormatCount) formats")
        }
        guard parts[0].count <= 32, parts[2].count <= 32, formats.allSatisfy({ $0.count <= 32 }) else {
            throw SDPError(line: number, field: "m", "a token longer than 32 characters")
        }
        media.append(
            SessionDescription.Media(
                kind: String(parts[0]), port: Int(port), transport: String(parts[2]), formats: formats.map(String.init))
        )
    }

    mutating func attribute(_ value: Substring, at number: Int) throws(SDPError) {
        let name = value.prefix { $0 != ":" }
        if let direction = SessionDescription.Direction(rawValue: String(name)), name.count == value.count {
            if media.isEmpty { self.direction = direction } else { media[media.count - 1].direction = direction }
            return
        }
        guard !media.isEmpty else { return }
        switch name {
        case "rtcp-mux": media[media.count - 1].rtcpMux = true
        case "rtpmap":
            guard media[media.count - 1].rtpMaps.count < SessionDescription.maximumFormatCount else {
                throw SDPError(line: number, field: "a=rtpmap", "more rtpmaps than formats allow")
            }
            media[media.count - 1].rtpMaps.append(try Self.rtpMap(value.dropFirst(name.count + 1), at: number))
        default: break
        }
    }

    func finish(lines: Int) throws(SDPError) -> SessionDescription {
        guard version else { throw SDPError(line: lines, field: "v", "missing") }
        guard let origin else { throw SDPError(line: lines, field: "o", "missing") }
        guard let sessionName else { throw SDPError(line: lines, field: "s", "missing") }
        guard let timing else { throw SDPError(line: lines, field: "t", "missing") }
        for (index, section) in media.enumerated() where section.connection == nil && connection == nil {
            throw SDPError(line: lines, field: "c", "media section \(index + 1) has no connection address")
        }
        var description = SessionDescription(
            origin: origin, sessionName: sessionName, connection: connection, direction: direction, media: media)
        description.timing = timing
        return description
    }

    static func origin(_ value: Substring, at number: Int) throws(SDPError) -> SessionDescription.Origin {
        let parts = value.split(separator: " ")
        guard parts.count == 6 else {
            throw SDPError(line: number, field: "o", "not <user> <id> <version> IN <family> <address>")
        }
        guard let id = Self.number(parts[1]), let version = Self.number(parts[2]) else {
            throw SDPError(line: number, field: "o", "session id or version not a number of at most 18 digits")
        }
        let connection = try Self.connection(parts[3...].joined(separator: " ")[...], at: number, field: "o")
        return SessionDescription.Origin(
            username: String(parts[0].prefix(64)), sessionID: id, version: version, connection: connection)
    }

    static func connection(
        _ value: Substring, at number: Int, field: String = "c"
    ) throws(SDPError) -> SessionDescription.Connection {
        let parts = value.split(separator: " ")
        guard parts.count == 3, parts[0] == "IN",
            let family = SessionDescription.AddressFamily(rawValue: String(parts[1]))
        else { throw SDPError(line: number, field: field, "not IN IP4|IP6 <address>: \(escaped(value))") }
        // Multicast `addr/ttl` keeps the address; a VoIP client uses unicast.
        let address = parts[2].prefix { $0 != "/" }
        guard !address.isEmpty, address.count <= 64,
            address.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0.isLetter || $0 == "." || $0 == ":" || $0 == "-") })
        else { throw SDPError(line: number, field: field, "address \(escaped(parts[2])) not a host") }
        guard (family == .ipv6) == address.contains(":") else {
            throw SDPError(line: number, field: field, "address \(escaped(address)) not \(family.rawValue)")
        }
        return SessionDescription.Connection(family: family, address: String(address))
    }

    static func rtpMap(_ value: Substring, at number: Int) throws(SDPError) -> SessionDescription.RTPMap {
        let parts = value.split(separator: " ")
        guard parts.count == 2, let type = Self.number(parts[0]), type <= 127 else {
            throw SDPError(line: number, field: "a=rtpmap", "payload type not in 0...127: \(escaped(value))")
        }
        let encoding = parts[1].split(separator: "/")
        guard (2...3).contains(encoding.count), encoding[0].count <= 32,
            let rate = Self.number(encoding[1]), (1...1_000_000).contains(rate)
        else { throw SDPError(line: number, field: "a=rtpmap", "not <encoding>/<rate>[/<channels>]") }
        var channels: Int?
        if encoding.count == 3 {
            guard let count = Self.number(encoding[2]), (1...16).contains(count) else {
                throw SDPError(line: number, field: "a=rtpmap", "channels not in 1...16")
            }
            channels = Int(count)
        }
        return SessionDescription.RTPMap(
            payloadType: Int(type), encoding: String(encoding[0]), clockRate: Int(rate), channels: channels)
    }

    /// Decimal digits only, at most 18 of them (≤ ``SessionDescription/maximumOriginNumber``).
    static func number(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(text)
    }
}

private func escaped(_ text: some StringProtocol) -> String { LogText.escaped(text, limit: 80) }
