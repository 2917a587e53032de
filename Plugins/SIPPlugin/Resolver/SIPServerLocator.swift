internal import ResilienceCore

/// One place a registrar's requests can go: an address, its port and transport, and the name it
/// came from (an SRV target, or the host itself).
public struct SIPTarget: Hashable, Sendable, CustomStringConvertible {
    /// The name the address belongs to (for logs); the address itself for a literal.
    public var name: String
    /// An IP literal.
    public var address: String
    public var port: Int
    public var transport: SIPTransportKind

    public init(name: String, address: String, port: Int, transport: SIPTransportKind) {
        self.name = name
        self.address = address
        self.port = port
        self.transport = transport
    }

    public var description: String { "\(transport.rawValue):\(name)[\(address)]:\(port)" }
}

/// RFC 3263 §4 for a registrar: which transport, port and addresses, in the order to try them.
///
/// - An IP literal is used as it is (§4.2), on the given port or the transport's default.
/// - A name with a port gets only A/AAAA lookups (§4.2: "If the TARGET was not a numeric IP
///   address, but a port is present in the URI, the client performs an A or AAAA record lookup").
/// - A name without a port: NAPTR (§4.1), keeping the records whose service is one of ours
///   (`SIP+D2U`, `SIP+D2T`, `SIPS+D2T`; only `SIPS+` for `sips:`), by order then preference;
///   without a usable NAPTR, the SRV records of our transports (`_sip._udp`, `_sip._tcp`,
///   `_sips._tcp`); without SRV, A/AAAA on the default port.
/// - SRV targets are ordered by priority, and within a priority by RFC 2782's weighted random
///   choice; each target's addresses follow it (IPv4 first), so the list is the failover order.
///
/// - A NAPTR or SRV answer that came but cannot be used (``DNSLookupError/unusableAnswer(_:_:)``:
///   more records than a message may hold here, malformed) counts as none of that type, so the
///   next step of §4.1 is taken: SRV after NAPTR, A/AAAA after SRV.
/// - An address ``check`` refuses (loopback, this client's own...) is skipped and told to
///   `refused`; the other targets are used.
///
/// Invariants: pure except for `lookup` and `refused` (the I/O is outside); at most
/// ``maximumTargets`` targets, at most ``maximumSRV`` SRV records and ``maximumNAPTR`` NAPTR
/// records considered, no name looked up twice in one resolution; the TTL is the smallest of the
/// records used; no target is an address `check` refuses.
struct SIPServerLocator: Sendable {
    static let maximumTargets = 16
    static let maximumSRV = 16
    static let maximumNAPTR = 16

    /// The host of the registrar URI.
    var host: String
    /// The port of the URI, when it has one.
    var port: Int?
    /// Whether the URI is `sips:` (TLS only).
    var secure: Bool
    /// The transports this client can use, in its order of preference.
    var supported: [SIPTransportKind]

    /// Which addresses from DNS are refused as servers.
    var check = ResolvedTargetCheck()
    /// Told each address refused: the record's name, the address and why.
    var refused: @Sendable (_ name: String, _ address: String, _ reason: String) -> Void = { _, _, _ in }

    typealias Lookup = @Sendable (String, DNSRecordType) async throws -> [DNSRecord]

    /// The targets in failover order (an SRV target "." means "not offered here", RFC 2782, and
    /// is skipped) and how many seconds they may be cached.
    func resolve(
        lookup: Lookup, random: @Sendable (UInt32) -> UInt32 = { .random(in: 0...$0) }
    ) async throws -> (targets: [SIPTarget], ttl: UInt32) {
        let transports = supported.filter { !secure || $0 == .tls }
        guard let preferred = transports.first else { throw PluginError.permanent("no transport for \(host)") }
        if Self.isIPLiteral(host) {
            return (
                [SIPTarget(name: host, address: host, port: port ?? preferred.defaultPort, transport: preferred)], 0
            )
        }
        if let port { return try await addresses(of: host, port: port, transport: preferred, lookup: lookup) }
        var ttl = UInt32.max
        var services = try await naptrServices(transports, lookup: lookup, ttl: &ttl)
        if services.isEmpty { services = transports.map { ($0.srvPrefix(secure: secure) + host, $0) } }
        for (name, transport) in services {
            let records = try await Self.usable(lookup, name, .srv).filter { $0.name == name.lowercased() }
            let entries = records.prefix(Self.maximumSRV).compactMap { record -> SRVEntry? in
                guard case .srv(let priority, let weight, let port, let target) = record.data else { return nil }
                ttl = min(ttl, record.ttl)
                return SRVEntry(priority: priority, weight: weight, port: port, target: target)
            }
            var targets: [SIPTarget] = []
            for entry in Self.ordered(entries, random: random)
            where targets.count < Self.maximumTargets && !entry.target.isEmpty {
                let found = try await addresses(
                    of: entry.target, port: Int(entry.port), transport: transport, lookup: lookup, known: records)
                ttl = min(ttl, found.ttl)
                targets += found.targets
            }
            if !targets.isEmpty { return (Array(targets.prefix(Self.maximumTargets)), ttl) }
        }
        let plain = try await addresses(of: host, port: preferred.defaultPort, transport: preferred, lookup: lookup)
        return (plain.targets, min(ttl, plain.ttl))
    }

    /// The SRV names the usable NAPTR records point to, best first (RFC 3263 §4.1, RFC 3403).
    private func naptrServices(
        _ transports: [SIPTransportKind], lookup: Lookup, ttl: inout UInt32
    ) async throws -> [(String, SIPTransportKind)] {
        var usable: [(order: UInt16, preference: UInt16, name: String, transport: SIPTransportKind)] = []
        let records = try await Self.usable(lookup, host, .naptr)
        for record in records.prefix(Self.maximumNAPTR) where record.name == host.lowercased() {
            guard case .naptr(let order, let preference, let flags, let service, _, let replacement) = record.data,
                flags == "s", !replacement.isEmpty,
                let transport = transports.first(where: { $0.naptrService == service })
            else { continue }
            ttl = min(ttl, record.ttl)
            usable.append((order, preference, replacement, transport))
        }
        return usable.sorted { ($0.order, $0.preference) < ($1.order, $1.preference) }.map { ($0.name, $0.transport) }
    }

    /// A and AAAA records of `name` (from `known`, the SRV answer's additional section, when it
    /// has them), IPv4 first.
    private func addresses(
        of name: String, port: Int, transport: SIPTransportKind, lookup: Lookup, known: [DNSRecord] = []
    ) async throws -> (targets: [SIPTarget], ttl: UInt32) {
        var records = known.filter { $0.name == name.lowercased() && $0.isAddress }
        if records.isEmpty {
            records = try await lookup(name, .a) + (try await lookup(name, .aaaa))
        }
        var ttl = UInt32.max
        var targets: [SIPTarget] = []
        for record in records where record.name == name.lowercased() {
            let address: String
            switch record.data {
            case .a(let text), .aaaa(let text): address = text
            default: continue
            }
            if let problem = check.problem(with: address) {
                refused(name, address, problem)
                continue
            }
            ttl = min(ttl, record.ttl)
            let target = SIPTarget(name: name, address: address, port: port, transport: transport)
            if !targets.contains(target) { targets.append(target) }
        }
        return (targets.sorted { !$0.address.contains(":") && $1.address.contains(":") }, ttl)
    }

    /// The records of a lookup; none when a server answered with something unusable (RFC 3263
    /// §4.1 goes on to the next kind of record then), the lookup's error otherwise.
    private static func usable(_ lookup: Lookup, _ name: String, _ type: DNSRecordType) async throws -> [DNSRecord] {
        do {
            return try await lookup(name, type)
        } catch DNSLookupError.unusableAnswer(_, _) {
            return []
        }
    }

    struct SRVEntry: Hashable {
        var priority: UInt16
        var weight: UInt16
        var port: UInt16
        var target: String
    }

    /// RFC 2782: lowest priority first; within a priority, "the sum of the weights of those RRs"
    /// is taken, "a uniform random number between 0 and the sum computed (inclusive)" chosen, and
    /// the first RR whose running sum is at least that number goes next, until none is left.
    /// Records of weight 0 are placed first so that they have "a very small chance" when others
    /// have weight.
    static func ordered(_ entries: [SRVEntry], random: (UInt32) -> UInt32) -> [SRVEntry] {
        var result: [SRVEntry] = []
        for priority in Set(entries.map(\.priority)).sorted() {
            var left = entries.filter { $0.priority == priority }.sorted { $0.weight < $1.weight }
            while !left.isEmpty {
                let sum = left.reduce(UInt32(0)) { $0 + UInt32($1.weight) }
                let pick = random(sum)
                var running: UInt32 = 0
                let index =
                    left.firstIndex { entry in
                        running += UInt32(entry.weight)
                        return running >= pick
                    } ?? 0
                result.append(left.remove(at: index))
            }
        }
        return result
    }

    static func isIPLiteral(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.contains(":") { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in Int(part).map { (0...255).contains($0) } ?? false }
    }
}

extension DNSRecord {
    var isAddress: Bool {
        switch data {
        case .a, .aaaa: true
        default: false
        }
    }
}

extension SIPTransportKind {
    /// RFC 3263 §4.1's NAPTR service field.
    var naptrService: String {
        switch self {
        case .udp: "sip+d2u"
        case .tcp: "sip+d2t"
        case .tls: "sips+d2t"
        }
    }

    /// `_sip._udp.`, `_sip._tcp.`, `_sips._tcp.` (RFC 3263 §4.1).
    func srvPrefix(secure: Bool) -> String {
        switch self {
        case .udp: "_sip._udp."
        case .tcp: "_sip._tcp."
        case .tls: "_sips._tcp."
        }
    }
}
