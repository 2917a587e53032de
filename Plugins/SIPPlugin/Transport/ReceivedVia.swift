/// What a server transport does with the top `Via` of a request that reached an account's
/// transport from anywhere (RFC 3261 §18.2.1, RFC 3581 §4), and which port of its source the
/// response to it goes to over UDP (RFC 3261 §18.2.2, RFC 3581 §4).
///
/// Pure functions on values. Invariants: only the first `Via` value changes, and only by its
/// `received` and `rport` parameters, which then hold the packet's source or are absent; a
/// request without a `Via` is refused (nil); an answer goes to the packet's source address,
/// whatever the request says.
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

    /// `request` with its top `Via` marked with where it came from: every `received` and `rport`
    /// the sender wrote is replaced by what the packet says, so nothing in the request can steer
    /// where its answer goes (see ``answerPort(of:sourcePort:)``).
    ///
    /// RFC 3261 §18.2.1: "If the host portion of the "sent-by" parameter contains a domain name,
    /// or if it contains an IP address that differs from the packet source address, the server
    /// MUST add a "received" parameter to that Via header field value. This parameter MUST
    /// contain the source address from which the packet was received." RFC 3581 §4: "If this Via
    /// header field value contains an "rport" parameter with no value, it MUST set the value of
    /// the parameter to the source port of the request." A client sends `rport` without a value
    /// (RFC 3581 §3), so a valued one (`;received=VICTIM;rport=PORT`) was written by someone
    /// steering the answer: it gets the source port too.
    static func stamped(_ request: SIPMessage, sourceHost: String, sourcePort: Int) -> SIPMessage? {
        guard let top = request.headers.listValues("Via").first, let sentBy = sentBy(of: top) else { return nil }
        var segments = top.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        var hadRport = false
        segments =
            [segments[0]]
            + segments.dropFirst().filter { segment in
                let name = String(segment.prefix { $0 != "=" }).trimmingSIPWhitespace().lowercased()
                if name == "rport" { hadRport = true }
                return name != "received" && name != "rport"
            }
        var stamped = segments.joined(separator: ";").trimmingSIPWhitespace()
        if hadRport { stamped += ";rport=\(sourcePort)" }
        if sentBy.host.lowercased() != sourceHost.lowercased() { stamped += ";received=\(sourceHost)" }
        guard stamped != top else { return request }
        var result = request
        result.headers = replacingTopVia(of: request.headers, with: stamped)
        return result
    }

    /// The port of the packet's source host that answers to `request` go to over UDP: the source
    /// port when the top `Via` has `rport` (RFC 3581 §4: "the response MUST be sent to the IP
    /// address listed in the "received" parameter, and the port in the "rport" parameter"),
    /// otherwise the sent-by port or 5060 (RFC 3261 §18.2.2: "using the port indicated in the
    /// "sent-by" value, or using port 5060 if none is specified explicitly"). The address is
    /// always the packet's source (what `received` holds after ``stamped(_:sourceHost:sourcePort:)``),
    /// never one the request names; a request without a usable `Via` is answered at the source
    /// port. `maddr` is not honoured: an answer goes unicast only.
    static func answerPort(of request: SIPMessage, sourcePort: Int) -> Int {
        guard let top = request.headers.listValues("Via").first, let sentBy = sentBy(of: top) else { return sourcePort }
        let parameters = SIPParameters.parse(afterFirstSemicolon: top)
        return parameters["rport"] != nil ? sourcePort : sentBy.port ?? 5060
    }

    private static func port(_ text: Substring) -> Int? {
        guard text.count <= 5, let value = Int(text), (1...65_535).contains(value) else { return nil }
        return value
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
