internal import Logging
internal import NIOCore
internal import NIOPosix
internal import ResilienceCore
internal import Synchronization

/// The plugin's RFC 3263 answers, shared by its accounts: one resolution per registrar name,
/// cached for its TTL, forgotten when the network changes.
///
/// Invariants: concurrent resolutions of one key share one lookup (100 accounts of one
/// registrar ask DNS once); an answer is kept for its TTL clamped to ``ttlRange``; when a
/// lookup fails after the TTL (DNS server down) the last answer is served again, for at most
/// ``staleLimit`` (RFC 8767's serve-stale), and the failure is logged; ``networkChanged()``
/// drops every answer, so the next action resolves on the new network; no answer lists an
/// address ``ResolvedTargetCheck`` refuses (each refusal logged, naming the record).
final class RegistrarDirectory: Sendable {
    static let ttlRange: ClosedRange<UInt32> = 5...3600
    static let staleLimit: Duration = .seconds(86400)

    struct Key: Hashable, Sendable {
        var host: String
        var port: Int?
        var secure: Bool
        var transport: SIPTransportKind
    }
    private struct Entry {
        var targets: [SIPTarget]
        var freshUntil: ContinuousClock.Instant
        var resolvedAt: ContinuousClock.Instant
        /// Set by a network change: kept only as the stale fallback.
        var forgotten = false
    }
    private struct State {
        var entries: [Key: Entry] = [:]
        var pending: [Key: Task<[SIPTarget], any Error>] = [:]
        var generation: UInt64 = 0
    }
    private let state = Mutex(State())
    /// The addresses DNS may not name as a server; this client's own follow the path.
    private let check: Mutex<ResolvedTargetCheck>
    private let lookup: SIPServerLocator.Lookup
    private let hosts: @Sendable () -> HostsFile
    private let resolveListed: @Sendable (String, Int) async throws -> String
    private let logger: Logger
    /// DNS lines a server's answers can provoke, under the plugin's log budget.
    private let log: ThrottledLog

    /// - Parameters:
    ///   - log: for `sip.dns-stale` and `sip.dns-target-refused` (its own budget by default).
    ///   - check: which addresses from DNS are refused (``ResolvedTargetCheck``'s defaults: no
    ///     loopback).
    ///   - lookup: the DNS lookup (``DNSClient`` over the system's resolv.conf by default).
    ///   - hosts: the hosts file, read at each resolution (`/etc/hosts` by default).
    ///   - resolveListed: the address of a name the hosts file lists (getaddrinfo by default).
    init(
        logger: Logger, log: ThrottledLog? = nil, check: ResolvedTargetCheck = ResolvedTargetCheck(),
        lookup: SIPServerLocator.Lookup? = nil, hosts: @escaping @Sendable () -> HostsFile = { HostsFile.system() },
        resolveListed: @escaping @Sendable (String, Int) async throws -> String = RegistrarDirectory.systemAddress
    ) {
        self.logger = logger
        self.log = log ?? ThrottledLog(logger: logger, clock: ContinuousClock())
        self.check = Mutex(check)
        self.lookup = lookup ?? Self.systemLookup
        self.hosts = hosts
        self.resolveListed = resolveListed
    }

    /// getaddrinfo's first address for `host`, on NIO's blocking-I/O pool.
    static let systemAddress: @Sendable (String, Int) async throws -> String = { host, port in
        let resolved = try await NIOThreadPool.singleton.runIfActive {
            try SocketAddress.makeAddressResolvingHost(host, port: port)
        }
        guard let address = resolved.ipAddress else {
            throw PluginError("cannot resolve registrar \(LogText.escaped(host, limit: 64))")
        }
        return address
    }

    /// Reads /etc/resolv.conf at each lookup: a network change may bring another server.
    static let systemLookup: SIPServerLocator.Lookup = { name, type in
        try await DNSClient(configuration: .system()).lookup(name, type, clock: ContinuousClock())
    }

    /// The targets of `account`'s registrar in failover order.
    func targets(of account: SIPAccount, clock: any RuntimeClock) async throws -> [SIPTarget] {
        let key = Key(
            host: account.registrarHost.lowercased(),
            port: account.registrarPortIsExplicit ? account.registrarPort : nil,
            secure: account.transport == .tls, transport: account.transport)
        return try await targets(of: key, port: account.registrarPort, clock: clock)
    }

    /// The targets of a dialog's record-routing proxy (its first Route) named `hop.host`, with
    /// `explicitPort` when the Route names one (RFC 3263 §4.2: then A/AAAA only), through the
    /// same cache as a registrar's.
    func targets(
        ofProxy hop: RemoteTarget, explicitPort: Bool, transport: SIPTransportKind, clock: any RuntimeClock
    ) async throws -> [SIPTarget] {
        let key = Key(
            host: hop.host.lowercased(), port: explicitPort ? hop.port : nil, secure: hop.isSecure,
            transport: hop.transport(from: transport))
        return try await targets(of: key, port: hop.port, clock: clock)
    }

    private func targets(of key: Key, port: Int, clock: any RuntimeClock) async throws -> [SIPTarget] {
        if SIPServerLocator.isIPLiteral(key.host) || key.host == "localhost" {
            let address = key.host == "localhost" ? "127.0.0.1" : key.host
            return [SIPTarget(name: key.host, address: address, port: port, transport: key.transport)]
        }
        if hosts().lists(key.host) {
            // A name the hosts file lists is the system resolver's to answer, as before RFC 3263
            // lookups existed: getaddrinfo orders its addresses by what this host can reach now
            // (RFC 6724), so an IPv6-only link gets the IPv6 one; no DNS server is asked.
            let address = try await resolveListed(key.host, port)
            return [SIPTarget(name: key.host, address: address, port: port, transport: key.transport)]
        }
        let now = clock.now
        let (cached, task) = state.withLock { state -> (Entry?, Task<[SIPTarget], any Error>?) in
            if let entry = state.entries[key], !entry.forgotten, entry.freshUntil > now { return (entry, nil) }
            if let pending = state.pending[key] { return (state.entries[key], pending) }
            let task = resolution(of: key, generation: state.generation, clock: clock)
            state.pending[key] = task
            return (state.entries[key], task)
        }
        guard let task else { return cached?.targets ?? [] }
        do {
            let targets = try await task.value
            if !targets.isEmpty { return targets }
            throw PluginError(
                "\(LogText.escaped(key.host, limit: 64)) has no SIP server (RFC 3263: no NAPTR, SRV, A or AAAA)")
        } catch {
            state.withLock { $0.pending[key] = nil }
            if let cached, now - cached.resolvedAt < Self.staleLimit {
                log.log(
                    .warning, "sip.dns-stale",
                    metadata: ["host": "\(LogText.escaped(key.host, limit: 64))", "error": "\(error)"])
                return cached.targets
            }
            throw error as? PluginError
                ?? PluginError("cannot resolve registrar \(LogText.escaped(key.host, limit: 64)): \(error)")
        }
    }

    /// One lookup of `key`, whose answer is kept unless the network changed meanwhile.
    private func resolution(of key: Key, generation: UInt64, clock: any RuntimeClock) -> Task<[SIPTarget], any Error> {
        let (targetCheck, wireLog) = (self.check.withLock { $0 }, self.log)
        return Task { [lookup] in
            var locator = SIPServerLocator(
                host: key.host, port: key.port, secure: key.secure, supported: [key.transport])
            locator.check = targetCheck
            locator.refused = { name, address, reason in
                wireLog.log(
                    .warning, "sip.dns-target-refused",
                    metadata: [
                        "record": "\(LogText.escaped(name, limit: 64))", "address": "\(LogText.escaped(address))",
                        "reason": "\(reason)",
                    ])
            }
            let (targets, ttl) = try await locator.resolve(lookup: lookup)
            let seconds = min(max(ttl, Self.ttlRange.lowerBound), Self.ttlRange.upperBound)
            state.withLock { state in
                state.pending[key] = nil
                guard state.generation == generation, !targets.isEmpty else { return }
                state.entries[key] = Entry(
                    targets: targets, freshUntil: clock.now + .seconds(Int(seconds)), resolvedAt: clock.now)
            }
            return targets
        }
    }

    /// The network changed: every answer is resolved again when next needed (kept only as a
    /// stale fallback), and DNS may not name `ownAddresses` (this client's, now) as a server.
    func networkChanged(ownAddresses: Set<String>? = nil) {
        if let ownAddresses { check.withLock { $0.ownAddresses = ownAddresses } }
        state.withLock { state in
            state.generation += 1
            state.pending.removeAll()
            for key in state.entries.keys { state.entries[key]?.forgotten = true }
        }
    }
}
