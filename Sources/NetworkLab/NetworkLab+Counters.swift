import Foundation
import Glibc

/// An nftables counter in a lab host: the UDP datagrams that arrive for one port, optionally
/// only those from one address. A far end's witness that media reached it (through a relay:
/// from the relay's address), whether or not the far end reads its socket.
///
/// Invariant: the counter's table lives in the host's namespace, so it goes with the lab even
/// when a test fails; ``remove()`` drops it earlier. Counts are read, never trusted: a number
/// that does not parse is an error, not zero.
public struct LabDatagramCounter: Sendable {
    public let lab: NetworkLab
    public let host: LabHost
    let table: String

    /// The datagrams counted so far.
    public func packets() async throws -> Int {
        let listing = try await lab.nft(in: host, ["list", "table", "inet", table])
        guard let range = listing.range(of: "counter packets "),
            let count = Int(listing[range.upperBound...].prefix { $0.isNumber }.prefix(18))
        else { throw NetworkLabError(.commandFailed, "no counter in \(LabText.quoted(String(listing.prefix(400))))") }
        return count
    }

    /// Removes the counter's table.
    public func remove() async throws { try await lab.nft(in: host, ["delete", "table", "inet", table]) }
}

extension NetworkLab {
    /// Starts counting the UDP datagrams that arrive in `host` for `port` (from `source` only,
    /// when given: an IPv4 or IPv6 literal), before any socket sees them.
    /// - Throws: ``NetworkLabError/Code/invalidRequest`` for a port outside 1…65535 or a source
    ///   that is not an IP literal; `.unsupported` without nftables.
    public func countDatagrams(in host: LabHost, toPort port: Int, from source: String? = nil) async throws
        -> LabDatagramCounter
    {
        guard (1...65_535).contains(port) else { throw error(.invalidRequest, "port \(port): want 1-65535") }
        var match = ""
        if let source {
            var bytes = [UInt8](repeating: 0, count: 16)
            if inet_pton(AF_INET, source, &bytes) == 1 {
                match = "ip saddr \(source) "
            } else if inet_pton(AF_INET6, source, &bytes) == 1 {
                match = "ip6 saddr \(source) "
            } else {
                throw error(.invalidRequest, "\(LabText.quoted(String(source.prefix(64)))) is not an IP address")
            }
        }
        nftSerial += 1
        let table = "netlab_\(getpid())_count_\(nftSerial)"
        let script = """
            table inet \(table) {
              chain in {
                type filter hook input priority -10; policy accept;
                \(match)udp dport \(port) counter
              }
            }

            """
        try await nft(in: host, ["-f", "-"], input: script)
        record("counting datagrams to port \(port) in \(host)", backend: .nftables)
        return LabDatagramCounter(lab: self, host: host, table: table)
    }

    /// Runs `nft ARGUMENTS` in `host`'s namespace.
    @discardableResult
    func nft(in host: LabHost, _ arguments: [String], input: String = "") async throws -> String {
        guard let nft = LabCommand.nft else { throw error(.unsupported, "nftables (`nft`) is not installed") }
        guard let ip = LabCommand.ip else { throw error(.unsupported, "iproute2 (`ip`) is not installed") }
        return try await LabCommand.run(
            [ip, "netns", "exec", host.namespace, nft] + arguments, input: input, seed: seed)
    }
}
