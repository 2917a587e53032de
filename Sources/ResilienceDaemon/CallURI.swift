import ResilienceCore
import SIPPlugin

/// Checks what `netres ctl` passes into a call: the target URI and a call id.
///
/// A URI is `sip:` or `sips:`, an optional user part (`SIPGrammar.userProblem(_:)`, as a
/// config's `user`), a host (`SIPGrammar.hostProblem(_:)`, as a config's `registrar`; IPv6 in
/// brackets) and an optional port 1–65535: no parameters, no headers, at most ``maximumLength``
/// bytes. Each check returns nil when valid, else a short reason that quotes the input escaped
/// and cut (`LogText`), so a hostile line never reaches a log or a reply raw.
public enum CallURI {
    public static let maximumLength = 256
    /// Call ids are the agent's random tokens; this bounds what a client can make us look up.
    public static let maximumIDLength = 64

    public static func problem(_ uri: String) -> String? {
        guard !uri.isEmpty else { return "is empty" }
        guard uri.utf8.count <= maximumLength else { return "is longer than \(maximumLength) bytes" }
        let shown = "\"\(LogText.escaped(uri, limit: 64))\""
        let lower = uri.lowercased()
        guard let scheme = ["sip:", "sips:"].first(where: { lower.hasPrefix($0) }) else {
            return "\(shown) does not start with sip: or sips:"
        }
        var rest = Substring(uri.dropFirst(scheme.count))
        if let at = rest.lastIndex(of: "@") {
            if let why = SIPGrammar.userProblem(String(rest[..<at])) { return "\(shown): its user part \(why)" }
            rest = rest[rest.index(after: at)...]
        }
        var host = rest
        var port: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return "\(shown): its IPv6 host has no \"]\"" }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return "\(shown): unexpected text after the host" }
                port = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = rest[rest.index(after: colon)...]
        }
        if let why = SIPGrammar.hostProblem(String(host)) { return "\(shown): its host \(why)" }
        if let port, !(port.allSatisfy(\.isASCII) && Int(port).map({ (1...65535).contains($0) }) == true) {
            return "\(shown): its port is not a number from 1 to 65535"
        }
        return nil
    }

    /// A call id: 1 to ``maximumIDLength`` letters, digits or `-._~`.
    public static func idProblem(_ id: String) -> String? {
        guard !id.isEmpty, id.utf8.count <= maximumIDLength,
            id.utf8.allSatisfy({ $0.isASCIIAlphanumeric || "-._~".utf8.contains($0) })
        else {
            return "\"\(LogText.escaped(id, limit: 64))\" is not 1 to \(maximumIDLength) letters, digits or -._~"
        }
        return nil
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self)
    }
}
