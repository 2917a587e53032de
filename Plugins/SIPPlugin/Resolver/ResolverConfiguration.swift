internal import Foundation

/// The system's resolver settings as the SIP resolver uses them: `/etc/resolv.conf`'s
/// `nameserver` lines and its `options timeout:N attempts:N` (resolv.conf(5)).
///
/// Invariants: at most ``maximumServers`` servers (glibc's MAXNS), each an IP literal on port 53
/// unless built with another; `timeout` 1–30 s and `attempts` 1–5, whatever the file says; a
/// file without a server means the local one (`127.0.0.1`), as glibc does.
struct ResolverConfiguration: Hashable, Sendable {
    static let maximumServers = 3

    /// Name servers as (IP literal, port), asked in order.
    var servers: [(host: String, port: Int)] {
        get { zip(hosts, ports).map { ($0, $1) } }
        set {
            hosts = newValue.prefix(Self.maximumServers).map(\.host)
            ports = newValue.prefix(Self.maximumServers).map { min(max($0.port, 1), 65535) }
        }
    }
    private var hosts: [String] = []
    private var ports: [Int] = []
    /// How long one query waits for its answer.
    var timeout: Duration
    /// How many rounds over the servers a lookup makes.
    var attempts: Int

    init(servers: [(host: String, port: Int)], timeout: Duration = .seconds(2), attempts: Int = 2) {
        self.timeout = min(max(timeout, .seconds(1)), .seconds(30))
        self.attempts = min(max(attempts, 1), 5)
        self.servers = servers
    }

    /// Reads resolv.conf text; unknown lines are ignored, a line is read up to 512 characters.
    init(resolvConf text: String) {
        var servers: [(host: String, port: Int)] = []
        var timeout = 5
        var attempts = 2
        for line in text.split(separator: "\n").prefix(1000) {
            let words = line.prefix(512).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let keyword = words.first, !keyword.hasPrefix("#"), !keyword.hasPrefix(";") else { continue }
            if keyword == "nameserver", words.count >= 2 {
                // A scope suffix (fe80::1%eth0) is kept: NIO reads it.
                servers.append((host: String(words[1]), port: 53))
            } else if keyword == "options" {
                for option in words.dropFirst() {
                    if option.hasPrefix("timeout:"), let value = Int(option.dropFirst(8)) { timeout = value }
                    if option.hasPrefix("attempts:"), let value = Int(option.dropFirst(9)) { attempts = value }
                }
            }
        }
        if servers.isEmpty { servers = [(host: "127.0.0.1", port: 53)] }
        self.init(servers: servers, timeout: .seconds(min(max(timeout, 1), 30)), attempts: attempts)
    }

    /// `/etc/resolv.conf` now (in a network namespace entered with `ip netns exec`, that
    /// namespace's bind-mounted copy); the local server when it cannot be read.
    static func system(path: String = "/etc/resolv.conf") -> ResolverConfiguration {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return ResolverConfiguration(resolvConf: String(text.prefix(65536)))
    }

    static func == (lhs: ResolverConfiguration, rhs: ResolverConfiguration) -> Bool {
        lhs.hosts == rhs.hosts && lhs.ports == rhs.ports && lhs.timeout == rhs.timeout && lhs.attempts == rhs.attempts
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hosts)
        hasher.combine(ports)
    }
}
