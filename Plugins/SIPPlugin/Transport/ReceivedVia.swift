/// What a server transport does with the top `Via` of a request that reached an account's
/// Contact from anywhere (RFC 3261 §18.2.1, RFC 3581 §4), and where the response to it goes
/// over UDP (RFC 3261 §18.2.2, RFC 3581 §4).
///
/// Pure functions on values. Invariants: only the first `Via` value changes, and only by its
/// `received` and `rport` parameters; a request without a `Via` is refused (nil); a response
/// target is an IP literal and a port in 1...65535, or nil (the caller then answers the source).
enum ReceivedVia {
    /// The sent-by of a `Via` value (`SIP/2.0/UDP host:port;params`): host without brackets and
    /// the port when one is given; nil when there is none, or its port is not in 1...65535.
    static func sentBy(of via: String) -> (host: String, port: Int?)? {
        let head = String(via.prefix { $0 != ";" }).trimmingSIPWhitespace()
        guard let space = head.lastIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }
        let hostPort = head[head.index(after: space)...]
        guard !hostPort.isEmpty else { return nil }
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            let host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let rest = hostPort[hostPort.index(after: close)...]
            guard !host.isEmpty, rest.isEmpty || rest.hasPrefix(":") else { return nil }
            return withPort(host, rest.isEmpty ? nil : rest.dropFirst())
        }
        let parts = hostPort.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard !parts[0].isEmpty else { return nil }
        return withPort(String(parts[0]), parts.count > 1 ? parts[1] : nil)
    }

    /// `host` with the port `text` names; nil when `text` is there but no port in 1...65535.
    private static func withPort(_ host: String, _ text: Substring?) -> (host: String, port: Int?)? {
        guard let text else { return (host, nil) }
        return port(text).map { (host, $0) }
    }

    /// `request` with its top `Via` marked with where it came from.
    ///
    /// RFC 3261 §18.2.1: "If the host portion of the "sent-by" parameter contains a domain name,
    /// or if it contains an IP address that differs from the packet source address, the server
    /// MUST add a "received" parameter to that Via header field value." RFC 3581 §4: "If this Via
    /// header field value contains an "rport" parameter with no value, it MUST set the value of
    /// the parameter to the source port of the request."
    static func stamped(_ request: SIPMessage, sourceHost: String, sourcePort: Int) -> SIPMessage? {
        guard let top = request.headers.listValues("Via").first, let sentBy = sentBy(of: top) else { return nil }
        let parameters = SIPParameters.parse(afterFirstSemicolon: top)
        var stamped = top
        if sentBy.host.lowercased() != sourceHost.lowercased(), parameters["received"] == nil {
            stamped = append(";received=\(sourceHost)", to: stamped)
        }
        if parameters["rport"] == "" { stamped = setEmptyRport(in: stamped, to: sourcePort) }
        guard stamped != top else { return request }
        var result = request
        result.headers = replacingTopVia(of: request.headers, with: stamped)
        return result
    }

    /// Where the response `response` (carrying the stamped `Via`) goes over UDP.
    ///
    /// RFC 3261 §18.2.2: "the response MUST be sent to the address in the "received" parameter,
    /// using the port indicated in the "sent-by" value, or using port 5060 if none is specified
    /// explicitly." RFC 3581 §4: "the response MUST be sent to the IP address listed in the
    /// "received" parameter, and the port in the "rport" parameter." (`maddr` is not honoured: a
    /// Contact's listener answers unicast only.)
    static func responseTarget(of response: SIPMessage) -> (host: String, port: Int)? {
        guard let top = response.headers.listValues("Via").first, let sentBy = sentBy(of: top) else { return nil }
        let parameters = SIPParameters.parse(afterFirstSemicolon: top)
        let host = parameters["received"].map { $0.hasPrefix("[") ? String($0.dropFirst().dropLast()) : $0 }
        let target = host ?? sentBy.host
        if let rport = parameters["rport"], !rport.isEmpty {
            return port(Substring(rport)).map { (target, $0) }
        }
        return (target, sentBy.port ?? 5060)
    }

    private static func port(_ text: Substring) -> Int? {
        guard text.count <= 5, let value = Int(text), (1...65_535).contains(value) else { return nil }
        return value
    }

    /// Appends `parameter` to the Via value, before nothing else (parameters are unordered).
    private static func append(_ parameter: String, to via: String) -> String {
        via.trimmingSIPWhitespace() + parameter
    }

    /// Gives the first valueless `rport` of the value `port`.
    private static func setEmptyRport(in via: String, to port: Int) -> String {
        var segments = via.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        for index in segments.indices.dropFirst() where segments[index].trimmingSIPWhitespace().lowercased() == "rport"
        {
            segments[index] = "rport=\(port)"
            break
        }
        return segments.joined(separator: ";")
    }

    /// The headers with the first value of the first `Via` field replaced.
    private static func replacingTopVia(of headers: SIPHeaders, with value: String) -> SIPHeaders {
        var result = SIPHeaders()
        var replaced = false
        for field in headers {
            guard !replaced, SIPHeaders.canonical(field.name) == "via" else {
                result.add(field.name, field.value)
                continue
            }
            replaced = true
            let rest = SIPHeaders.splitList(field.value).dropFirst()
            result.add(field.name, ([value] + rest).joined(separator: ", "))
        }
        return result
    }
}
