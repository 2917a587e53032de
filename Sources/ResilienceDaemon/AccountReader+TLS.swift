import ResiliencePolicyFile
import SIPPlugin
import Yams

extension AccountReader {
    /// Reads `tls: { ca-file, certificate-file, key-file, server-name }`; files resolve against
    /// the config's directory, and a client certificate needs its key (and the other way round).
    func tlsSettings(_ node: Node) throws(PolicyFileError) -> SIPTLSSettings {
        let entries = try reader.mapping(
            node, keys: ["ca-file", "certificate-file", "key-file", "server-name"], what: "tls")
        var settings = SIPTLSSettings()
        for entry in entries {
            guard entry.key != "server-name" else {
                settings.serverName = try checked(entry.value, "tls server-name", SIPGrammar.hostProblem)
                continue
            }
            let path = try regularFile(entry.value, what: "tls \(entry.key)")
            switch entry.key {
            case "ca-file": settings.caFile = path
            case "certificate-file": settings.certificateFile = path
            default: settings.keyFile = path
            }
        }
        guard (settings.certificateFile == nil) == (settings.keyFile == nil) else {
            throw reader.fail(
                .contradiction, at: node, "tls needs both certificate-file and key-file, or neither",
                expected: "a client certificate with its private key")
        }
        return settings
    }

    /// The resolved path at `node`, refused when something other than a regular file is there:
    /// reading a FIFO or a device would block the thread that reads it (an event loop, at the
    /// first TLS connect). A missing file is left to the first connect to report.
    func regularFile(_ node: Node, what: String) throws(PolicyFileError) -> String {
        let path = resolve(try reader.scalar(node, expected: "a file"))
        if let kind = SIPTLSSettings.nonRegularKind(at: path) {
            throw reader.fail(
                .invalidValue, at: node, "\(what) \(path) is \(kind), not a regular file",
                expected: "a PEM file")
        }
        return path
    }

    /// A `sips:` registrar means TLS (RFC 3261 §19.1): the scheme is dropped from the host, the
    /// transport becomes `tls` (a different `transport:` is an error), and without `port:` the
    /// port is 5061; so is a `transport: tls` account's.
    func applySIPS(to account: inout SIPAccount, entries: [LocatedYAML.Entry]) throws(PolicyFileError) {
        if account.registrarHost != Self.withoutSIPS(account.registrarHost) {
            account.registrarHost = Self.withoutSIPS(account.registrarHost)
            if let transport = entries.first(where: { $0.key == "transport" }), account.transport != .tls {
                throw reader.fail(
                    .contradiction, at: transport.value,
                    "a sips: registrar needs transport tls, found \(account.transport.rawValue)",
                    expected: "transport: tls, or no transport")
            }
            account.transport = .tls
        }
        if !entries.contains(where: { $0.key == "port" }) {
            account.registrarPort = account.transport.defaultPort
            // No port given: a name's SRV records choose it (RFC 3263 §4.2).
            account.registrarPortIsExplicit = false
        }
    }

    /// `registrar` without a leading `sips:` (any case): the host the grammar checks.
    static func withoutSIPS(_ registrar: String) -> String {
        registrar.lowercased().hasPrefix("sips:") ? String(registrar.dropFirst(5)) : registrar
    }
}
