import Foundation
import Glibc
import ResilienceCore

/// A throw-away network of hosts (namespaces) and links (veth pairs) that faults act on.
///
/// Invariants:
/// - every object the lab makes carries its owner's PID (``LabOwnership``): a lab's ``shutdown()``
///   (or, if it was never called, `deinit`) removes them, and a new lab removes those of dead owners,
///   so nothing stays behind even after the test process is killed;
/// - no task thread ever calls `setns`: every command enters its namespace in a child (`ip -n`,
///   `ip netns exec`), and the delay relay (``Fault/delay(_:delay:jitter:for:)``) on a thread of its own;
/// - every random choice comes from ``seed`` (`SplitMix64` of ResilienceCore); errors carry it, and
///   ``withNetworkLab(seed:_:)`` prints it when the body fails;
/// - only 198.18.0.0/15 and 2001:db8::/32 addresses are used, and nothing is routed out of the lab.
public actor NetworkLab {
    /// The seed of every random choice; set `NETWORKLAB_SEED` to replay a run.
    public nonisolated let seed: UInt64
    /// The lab's folder, `/tmp/netlab-<owner pid>-<lab>`, removed at shutdown.
    public nonisolated let directory: String
    nonisolated let labID: String
    var random: SplitMix64
    let started = ContinuousClock.now
    var hosts: [LabHost] = []
    var plans: [Int: LinkPlan] = [:]
    var children: [pid_t] = []
    var timeline: [LabEvent] = []
    var nftSerial = 0
    /// Each NAT gateway's rebinding count (``Fault/natRebinding(_:)``), keyed by its host's name.
    var natGenerations: [String: Int] = [:]
    var isShutDown = false
    /// Run first at shutdown: stops the lab's in-process services (``LabPushService``).
    var onShutdown: [@Sendable () -> Void] = []

    /// Whether this machine can host a lab: root, and iproute2 installed.
    public static var isSupported: Bool { geteuid() == 0 && LabCommand.ip != nil }

    /// Makes an empty lab after removing the objects of labs whose owners died.
    /// - Parameter seed: nil takes `NETWORKLAB_SEED` from the environment, or a fresh one.
    public init(seed: UInt64? = nil) throws {
        guard Self.isSupported else {
            throw NetworkLabError(.unsupported, "a lab needs root and iproute2 (`ip`)")
        }
        let seed = seed ?? LabSeed.choose(environment: ProcessInfo.processInfo.environment)
        self.seed = seed
        random = SplitMix64(seed: seed)
        labID = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        directory = "/tmp/\(LabOwnership.prefix)\(getpid())-\(labID)"
        LabOwnership.collectGarbage()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        guard !isShutDown else { return }
        for pid in children { kill(-pid, SIGKILL) }
        for host in hosts {
            LabOwnership.killProcesses(inNamespace: host.namespace)
            if let ip = LabCommand.ip { LabCommand.runBlocking([ip, "netns", "delete", host.namespace]) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Adds a host: a namespace with `lo` up, secondary IPv4 addresses promoted when a primary goes,
    /// IPv6 addresses kept across link-down, and no duplicate address detection.
    public func addHost(_ name: String) async throws -> LabHost {
        guard name.count <= 20, name.allSatisfy({ $0.isLetter || $0.isNumber }), !name.isEmpty,
            !hosts.contains(where: { $0.name == name })
        else { throw error(.invalidRequest, "host name \(LabText.quoted(name)): want 1-20 letters or digits, unique") }
        let host = LabHost(name: name, namespace: "\(LabOwnership.prefix)\(getpid())-\(labID)-\(name)")
        try await ip(["netns", "add", host.namespace])
        hosts.append(host)
        try await ip(["-n", host.namespace, "link", "set", "lo", "up"])
        try await run(
            in: host,
            [
                "sysctl", "-qw", "net.ipv4.conf.all.promote_secondaries=1",
                "net.ipv4.conf.default.promote_secondaries=1", "net.ipv6.conf.all.keep_addr_on_down=1",
                "net.ipv6.conf.default.keep_addr_on_down=1", "net.ipv6.conf.all.accept_dad=0",
                "net.ipv6.conf.default.accept_dad=0", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
            ])
        record("host \(name) added", backend: .iproute2)
        return host
    }

    /// Connects `host` to `peer` with a veth pair named `name` in `host` and `name` + `p` in `peer`, on
    /// `198.18.<n>.0/24` and `2001:db8:<n>::/64` (n = the link's position), host end `.2`, peer end `.1`;
    /// with `defaultRoute`, the host routes everything through it at `metric` (a second link with a
    /// higher metric is the "cellular" an interface switch moves to).
    public func connect(
        _ host: LabHost, to peer: LabHost, as name: String, metric: Int = 100, defaultRoute: Bool = true
    ) async throws -> LabLink {
        guard name.count <= 14, name.allSatisfy({ $0.isLetter || $0.isNumber }), !name.isEmpty else {
            throw error(.invalidRequest, "link name \(LabText.quoted(name)): want 1-14 letters or digits")
        }
        guard plans.count < 90, (1...10_000).contains(metric) else {
            throw error(.invalidRequest, "at most 90 links, metrics 1-10000")
        }
        let link = LabLink(id: plans.count + 1, name: name, host: host, peer: peer, metric: metric)
        let plan = LinkPlan(
            link: link, interface: name, peerInterface: name + "p", subnet: link.id, hostOctet: 2,
            hostNamespace: host.namespace)
        plans[link.id] = plan
        try await createVeth(plan, routes: defaultRoute)
        record("link \(name) \(host)<->\(peer) \(plan.addresses.ipv4) metric \(metric)", backend: .iproute2)
        return link
    }

    /// Where `link`'s host end stands now.
    public func addresses(of link: LabLink) -> LinkAddresses { plan(link).addresses }

    /// Makes the veth pair of `plan` with both ends' addresses, both up, and the host's default routes.
    ///
    /// The peer end gets ifindex 1000 + the link's id, so the two ends never share a number (each
    /// namespace counts from 2): the kernel's linkwatch treats a veth's carrier change as urgent only
    /// when its ifindex differs from its peer's, and otherwise delays a carrier-on by up to a second
    /// and folds fast flaps into nothing a monitor can see.
    func createVeth(_ plan: LinkPlan, routes: Bool) async throws {
        // Made from the peer's side: `index` applies to the first device only (iproute2 6.1).
        try await ip([
            "link", "add", plan.peerInterface, "index", "\(1000 + plan.link.id)", "netns", plan.link.peer.namespace,
            "type", "veth", "peer", "name", plan.interface, "netns", plan.hostNamespace,
        ])
        try await batch(plan.link.peer.namespace, plan.peerAddressLines + ["link set \(plan.peerInterface) up"])
        try await batch(
            plan.hostNamespace,
            plan.hostAddressLines + ["link set \(plan.interface) up"] + (routes ? plan.routeLines : []))
    }

    /// Gives `host` the registrar's fixed service addresses (``LabAddress``) on its loopback.
    func addServiceAddresses(to host: LabHost) async throws {
        try await batch(
            host.namespace,
            ["address add \(LabAddress.service4)/32 dev lo", "address add \(LabAddress.service6)/128 dev lo"])
    }

    /// Stops every process the lab started, then deletes its namespaces (with every link, rule and
    /// qdisc in them, and any process still inside) and its folder. Safe to call twice.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        for stop in onShutdown { stop() }
        for pid in children.reversed() { await LabCommand.stop(pid) }
        children.removeAll()
        for host in hosts.reversed() {
            await LabOwnership.killProcessesOffThePool(inNamespace: host.namespace)
            _ = try? await ip(["netns", "delete", host.namespace])
            try? FileManager.default.removeItem(atPath: LabOwnership.etcFolder(of: host.namespace))
        }
        hosts.removeAll()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func plan(_ link: LabLink) -> LinkPlan {
        guard let plan = plans[link.id] else { preconditionFailure("link \(link) belongs to another lab") }
        return plan
    }

    func error(_ code: NetworkLabError.Code, _ message: String) -> NetworkLabError {
        NetworkLabError(code, message, seed: seed)
    }
}

/// Runs `body` with a fresh lab and always shuts it down; when `body` throws, prints the seed to
/// standard error (`NETWORKLAB_SEED=<seed>` replays the run) before rethrowing. The objects of
/// labs whose owners died are removed first without holding a thread of Swift's pool (each
/// takes `ip netns pids` and `ip netns delete` runs), so the lab's own collection finds none.
public func withNetworkLab<T: Sendable>(
    seed: UInt64? = nil, _ body: (NetworkLab) async throws -> T
) async throws -> T {
    if NetworkLab.isSupported { await LabOwnership.collectGarbageOffThePool() }
    let lab = try NetworkLab(seed: seed)
    do {
        let result = try await body(lab)
        await lab.shutdown()
        return result
    } catch {
        FileHandle.standardError.write(
            Data("NetworkLab failed with seed \(lab.seed): replay with NETWORKLAB_SEED=\(lab.seed)\n".utf8))
        await lab.shutdown()
        throw error
    }
}
