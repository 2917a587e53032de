import Foundation
import Glibc

/// The records a ``LabDNS`` serves, written as dnsmasq options (Debian `dnsmasq-base`).
///
/// Invariant: every name and text is checked before it reaches dnsmasq's command line (host-name
/// characters only; no commas, quotes or spaces), every number clamped to its field.
public struct LabDNSRecords: Hashable, Sendable {
    /// RFC 3403 NAPTR: `service` like `SIP+D2U`, pointing at an SRV name (flag `S`).
    public struct NAPTR: Hashable, Sendable {
        public var name: String
        public var order: Int
        public var preference: Int
        public var service: String
        public var replacement: String
        public init(name: String, order: Int, preference: Int, service: String, replacement: String) {
            (self.name, self.order, self.preference, self.service, self.replacement) =
                (name, order, preference, service, replacement)
        }
    }
    /// RFC 2782 SRV: `name` like `_sip._udp.lab.test`.
    public struct SRV: Hashable, Sendable {
        public var name: String
        public var target: String
        public var port: Int
        public var priority: Int
        public var weight: Int
        public init(name: String, target: String, port: Int, priority: Int, weight: Int) {
            (self.name, self.target, self.port, self.priority, self.weight) = (name, target, port, priority, weight)
        }
    }

    public var naptr: [NAPTR]
    public var srv: [SRV]
    /// A/AAAA records: a name and its addresses.
    public var hosts: [String: [String]]
    /// The TTL of every record, clamped to 0...86400 (dnsmasq's `--local-ttl`).
    public var ttl: Int

    public init(naptr: [NAPTR] = [], srv: [SRV] = [], hosts: [String: [String]] = [:], ttl: Int = 60) {
        (self.naptr, self.srv, self.hosts, self.ttl) = (naptr, srv, hosts, ttl)
    }

    /// dnsmasq's options for these records.
    func arguments() throws -> [String] {
        func checked(_ text: String) throws -> String {
            let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: ".-_+:"))
            guard !text.isEmpty, text.count <= 253, text.unicodeScalars.allSatisfy(allowed.contains) else {
                throw NetworkLabError(.invalidRequest, "DNS record text \(LabText.quoted(text))", seed: 0)
            }
            return text
        }
        func clamp(_ value: Int) -> Int { min(max(value, 0), 65535) }
        var arguments = naptr.map { record in
            "--naptr-record=\(record.name),\(clamp(record.order)),\(clamp(record.preference)),S,\(record.service),,\(record.replacement)"
        }
        arguments += srv.map {
            "--srv-host=\($0.name),\($0.target),\(clamp($0.port)),\(clamp($0.priority)),\(clamp($0.weight))"
        }
        arguments += hosts.keys.sorted().map { "--host-record=\($0),\(hosts[$0]!.joined(separator: ","))" }
        for argument in arguments {
            _ = try checked(String(argument.drop { $0 != "=" }.dropFirst()).replacingOccurrences(of: ",", with: ""))
        }
        return arguments + ["--local-ttl=\(min(max(ttl, 0), 86400))"]
    }
}

/// dnsmasq as the lab's DNS server, on a fixed address of a lab host's loopback
/// (``LabAddress/dns4``), authoritative for ``domain`` (`--local`: a name it has no record of is
/// NXDOMAIN, never forwarded), and the resolver of the hosts given to ``serve(_:)`` through
/// `/etc/netns/NAMESPACE/resolv.conf` (which `ip netns exec` bind-mounts over /etc/resolv.conf).
///
/// Invariants: dnsmasq is the lab's child and goes with it; the resolv.conf files it wrote go with
/// their hosts' `/etc/netns` folders (the lab's shutdown, or the garbage collection of a dead
/// owner); its query log is `DIR/dnsmasq.log`.
public actor LabDNS {
    public nonisolated let lab: NetworkLab
    public nonisolated let host: LabHost
    public nonisolated let address: String
    public nonisolated let domain: String
    nonisolated let directory: String
    public private(set) var records: LabDNSRecords
    var pid: pid_t?

    static let dnsmasq = LabCommand.executable("dnsmasq")
    public static var isInstalled: Bool { dnsmasq != nil }

    /// The query log (`--log-queries`): one `query[TYPE] NAME from ADDRESS` line per question.
    public nonisolated var logPath: String { directory + "/dnsmasq.log" }

    init(lab: NetworkLab, host: LabHost, address: String, domain: String, records: LabDNSRecords, directory: String) {
        (self.lab, self.host, self.address, self.domain, self.records, self.directory) =
            (lab, host, address, domain, records, directory)
    }

    /// Starts dnsmasq with ``records`` (no-op when it runs).
    public func start() async throws {
        guard pid == nil else { return }
        guard let dnsmasq = Self.dnsmasq else {
            throw NetworkLabError(.unsupported, "the lab's DNS needs dnsmasq (Debian dnsmasq-base)", seed: lab.seed)
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let argv =
            [
                dnsmasq, "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
                "--bind-interfaces", "--listen-address=\(address)", "--port=53", "--local=/\(domain)/",
                "--pid-file=\(directory)/dnsmasq.pid", "--user=root", "--group=root", "--log-queries",
                "--log-facility=\(logPath)",
            ] + (try records.arguments())
        let started = try await lab.spawn(in: host, argv, output: directory + "/dnsmasq.out")
        pid = started
        // Up when it answers: a probe lookup from its own host (`host` is in bind9-host).
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if await lab.exitStatus(of: started) != nil { break }
            if let log = try? String(contentsOfFile: logPath, encoding: .utf8), log.contains("started") {
                await lab.record("dns started", backend: .dnsmasq)
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await stop()
        let output = (try? String(contentsOfFile: directory + "/dnsmasq.out", encoding: .utf8)) ?? ""
        throw NetworkLabError(.timedOut, "dnsmasq did not come up within 5 s: \(output.suffix(500))", seed: lab.seed)
    }

    /// Stops dnsmasq (the fault "DNS server down"): lookups go unanswered (ICMP port unreachable).
    public func stop() async {
        guard let running = pid else { return }
        pid = nil
        await lab.stop(running)
        await lab.record("dns stopped", backend: .dnsmasq)
    }

    /// Serves `records` from now on (dnsmasq restarted: a record change).
    public func replace(_ records: LabDNSRecords) async throws {
        self.records = records
        await stop()
        try await start()
    }

    /// Makes this server the resolver of `host` (its `/etc/netns/NAMESPACE/resolv.conf`).
    public func serve(_ client: LabHost) async throws {
        let folder = LabOwnership.etcFolder(of: client.namespace)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "nameserver \(address)\noptions timeout:1 attempts:2\n".write(
            toFile: folder + "/resolv.conf", atomically: true, encoding: .utf8)
    }

    /// The questions dnsmasq has logged so far, as `(type, name)`.
    public nonisolated func queries() -> [(type: String, name: String)] {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "query[") else { return nil }
            let rest = line[range.upperBound...]
            guard let close = rest.firstIndex(of: "]") else { return nil }
            let words = rest[rest.index(after: close)...].split(separator: " ")
            return words.first.map { (String(rest[..<close]), String($0)) }
        }
    }
}

extension NetworkLab {
    /// Starts dnsmasq in `host` on ``LabAddress/dns4`` (added to its loopback), serving `records`
    /// for `domain`.
    public func startDNS(in host: LabHost, domain: String, records: LabDNSRecords) async throws -> LabDNS {
        try await batch(host.namespace, ["address add \(LabAddress.dns4)/32 dev lo"])
        let dns = LabDNS(
            lab: self, host: host, address: LabAddress.dns4, domain: domain, records: records,
            directory: directory + "/dns-\(host.name)")
        try await dns.start()
        return dns
    }
}

extension LabAddress {
    /// The lab DNS server's address (``LabDNS``).
    public static let dns4 = "198.19.255.53"
    /// A backup registrar's address (``NetworkLab/startBackupRegistrar(in:options:)``).
    public static let backup4 = "198.19.255.2"
}

extension FaultBackend {
    /// The lab's DNS server (``LabDNS``).
    public static let dnsmasq = FaultBackend(rawValue: "dnsmasq")
}
