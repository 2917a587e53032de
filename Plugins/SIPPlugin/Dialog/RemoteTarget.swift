/// Where an in-dialog request with an empty route set goes (RFC 3261 §12.2.1.1: "the UAC MUST
/// place the remote target URI into the Request-URI", and §8.1.2: with no Route the request goes
/// to the Request-URI's host): the host, port and transport a remote target URI names.
///
/// A pure value parsed from a peer's Contact, so hostile: the host is at most
/// ``maximumHostLength`` characters of a host name or an IP literal (brackets stripped), the port
/// is 1...65535 (the scheme's default when absent or out of range), and anything else is nil.
struct RemoteTarget: Hashable, Sendable {
    /// The longest host accepted (RFC 1035's limit for a name).
    static let maximumHostLength = 253

    /// A host name or an IP literal (an IPv6 one without its brackets).
    let host: String
    let port: Int
    /// The `transport` parameter, lowercased; nil when the URI names none.
    let transport: String?
    /// `sips:`: TLS only.
    let isSecure: Bool

    /// The transport a request to this target takes from an account of `kind`: the URI's own
    /// when it names one we speak, `tls` for `sips:`, else the account's.
    func transport(from kind: SIPTransportKind) -> SIPTransportKind {
        if isSecure { return .tls }
        return transport.flatMap(SIPTransportKind.init(rawValue:)) ?? kind
    }
}

extension RemoteTarget {
    /// Parses `sip:user@host:port;params?headers` (or `sips:`); nil for another scheme or a host
    /// that is empty, too long or holds characters no host has.
    init?(uri: String) {
        let lowered = uri.prefix(5).lowercased()
        let rest: Substring
        if lowered.hasPrefix("sips:") {
            (isSecure, rest) = (true, uri.dropFirst(5))
        } else if lowered.hasPrefix("sip:") {
            (isSecure, rest) = (false, uri.dropFirst(4))
        } else {
            return nil
        }
        // The user part ends at the last `@` before any parameter or header.
        let beforeParameters = rest.prefix { $0 != ";" && $0 != "?" }
        let hostPort =
            beforeParameters.lastIndex(of: "@").map { beforeParameters[rest.index(after: $0)...] }
            ?? beforeParameters
        let host: Substring
        var portText: Substring = ""
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else {
            host = hostPort.prefix { $0 != ":" }
            portText = hostPort.dropFirst(host.count).dropFirst()
        }
        let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || ".-:_".contains($0)) }
        guard !host.isEmpty, host.count <= Self.maximumHostLength, allowed else { return nil }
        self.host = String(host)
        let defaultPort = isSecure ? 5061 : 5060
        if let port = Int(portText.prefix(5)), (1...65_535).contains(port), portText.count <= 5 {
            self.port = port
        } else {
            self.port = defaultPort
        }
        let parameters = rest.dropFirst(beforeParameters.count).prefix { $0 != "?" }
        let transport = SIPParameters.parse(afterFirstSemicolon: String(parameters))["transport"]
        self.transport = transport.map { String($0.prefix(8)).lowercased() }
    }
}
