/// A SIP request or response (RFC 3261 §7).
public struct SIPMessage: Hashable, Sendable {
    public enum StartLine: Hashable, Sendable {
        case request(method: String, uri: String)
        case response(status: Int, reason: String)
    }

    public var startLine: StartLine
    public var headers: SIPHeaders
    public var body: [UInt8]

    public init(startLine: StartLine, headers: SIPHeaders = SIPHeaders(), body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    public static func request(_ method: String, uri: String, headers: SIPHeaders = SIPHeaders()) -> SIPMessage {
        SIPMessage(startLine: .request(method: method, uri: uri), headers: headers)
    }

    public var method: String? {
        if case .request(let method, _) = startLine { return method }
        return nil
    }

    public var status: Int? {
        if case .response(let status, _) = startLine { return status }
        return nil
    }

    public var isRequest: Bool { method != nil }

    /// The Request-URI of a request; nil for a response.
    public var requestURI: String? {
        if case .request(_, let uri) = startLine { return uri }
        return nil
    }

    /// `CSeq` as number and method, when well formed: the number is below 2^31 (RFC 3261
    /// §8.1.1.5), so adding one to it never overflows.
    public var cseq: (number: UInt32, method: String)? {
        guard let raw = headers["CSeq"] else { return nil }
        let parts = raw.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2, parts[0].count <= 10, parts[0].allSatisfy(\.isASCIIDigit),
            let number = UInt32(parts[0]), number <= Int32.max
        else { return nil }
        return (number, String(parts[1]).uppercased())
    }

    /// The `branch` parameter of the top-most `Via`.
    public var topViaBranch: String? {
        guard let via = headers.listValues("Via").first else { return nil }
        return SIPParameters.parse(afterFirstSemicolon: via)["branch"]
    }

    /// The `tag` parameter of a `From` or `To` header (nil when the header or its tag is absent).
    func tag(in header: String) -> String? {
        headers[header].flatMap { SIPParameters.parse(afterFirstSemicolon: $0)["tag"] }
    }

    /// Serializes with CRLF line ends and a `Content-Length` that matches the body.
    public func serialized() -> [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let uri): text = "\(method) \(uri) SIP/2.0\r\n"
        case .response(let status, let reason): text = "SIP/2.0 \(status) \(reason)\r\n"
        }
        for field in headers where SIPHeaders.canonical(field.name) != "content-length" {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Content-Length: \(body.count)\r\n\r\n"
        return Array(text.utf8) + body
    }

    /// A response to this request that copies Via, From, To, Call-ID and CSeq (RFC 3261 §8.2.6),
    /// and for a response that creates a dialog (101–299 to an INVITE, SUBSCRIBE, REFER or
    /// NOTIFY outside a dialog: no To tag) every Record-Route value, in order (§12.1.1).
    public func makeResponse(status: Int, reason: String, toTag: String? = nil) -> SIPMessage {
        var response = SIPMessage(startLine: .response(status: status, reason: reason))
        let createsDialog =
            (101..<300).contains(status) && Self.dialogCreatingMethods.contains(method?.uppercased() ?? "")
            && self.tag(in: "To") == nil
        for field in headers {
            switch SIPHeaders.canonical(field.name) {
            case "via", "from", "call-id", "cseq": response.headers.add(field.name, field.value)
            case "record-route" where createsDialog: response.headers.add(field.name, field.value)
            case "to":
                let hasTag = SIPParameters.parse(afterFirstSemicolon: field.value)["tag"] != nil
                let value = (hasTag || toTag == nil) ? field.value : field.value + ";tag=\(toTag!)"
                response.headers.add(field.name, value)
            default: break
            }
        }
        return response
    }

    /// The requests whose 1xx/2xx may create a dialog (RFC 3261 §12.1, RFC 6665 §4.1.2.4).
    static let dialogCreatingMethods: Set<String> = ["INVITE", "SUBSCRIBE", "REFER", "NOTIFY"]
}

/// `;name=value` parameters of a header value or URI. Names are compared lower-cased.
public struct SIPParameters: Hashable, Sendable {
    public var values: [String: String]

    public subscript(_ name: String) -> String? { values[name.lowercased()] }

    /// Parses the parameters after the first `;` that is outside quotes and `<...>`.
    public static func parse(afterFirstSemicolon value: String) -> SIPParameters {
        var result: [String: String] = [:]
        var inQuotes = false
        var angle = 0
        var segments: [String] = []
        var current = ""
        var started = false
        for ch in value {
            if ch == "\"" { inQuotes.toggle() }
            if !inQuotes {
                if ch == "<" { angle += 1 }
                if ch == ">" { angle = max(0, angle - 1) }
                if ch == ";" && angle == 0 {
                    if started { segments.append(current) }
                    started = true
                    current = ""
                    continue
                }
            }
            if started { current.append(ch) }
        }
        if started { segments.append(current) }
        for segment in segments {
            let pieces = segment.split(separator: "=", maxSplits: 1)
            guard let key = pieces.first?.description.trimmingSIPWhitespace(), !key.isEmpty else { continue }
            var val = pieces.count > 1 ? String(pieces[1]).trimmingSIPWhitespace() : ""
            if val.count >= 2, val.hasPrefix("\""), val.hasSuffix("\"") { val = String(val.dropFirst().dropLast()) }
            result[key.lowercased()] = val
        }
        return SIPParameters(values: result)
    }
}

/// The URI inside a `name-addr` (`"Bob" <sip:bob@host>;tag=1`) or a bare `addr-spec`.
func extractURI(_ headerValue: String) -> String {
    if let open = headerValue.firstIndex(of: "<"),
        let close = headerValue[open...].firstIndex(of: ">")
    {
        return String(headerValue[headerValue.index(after: open)..<close])
    }
    let trimmed = headerValue.trimmingSIPWhitespace()
    return String(trimmed.prefix { $0 != ";" })
}
