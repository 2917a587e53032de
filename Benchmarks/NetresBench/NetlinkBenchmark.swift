import Foundation
import Logging
import NetlinkMonitor
import ResilienceCore
import Synchronization

/// Detection latency: from the `RTM_NEWLINK` request that changes a link to (a) the floor — a
/// bare netlink socket blocked in `recv` — seeing it, (b) the raw event reaching a library
/// subscriber of `NetlinkMonitor.events()`, (c) the transition reaching a subscriber of
/// `transitions()`. Runs inside a NetworkLab host of its own (``runInsideOwnNamespace(arguments:)``:
/// veth pair `nrb0`/`nrb0p` both in that host, 198.18.0.0/15 only).
struct NetlinkBenchmark {
    var changes: Int
    var idleSeconds: Int

    /// Observations of one reader: receipt instant and what it saw.
    final class Recorder<Value: Sendable>: Sendable {
        private let seen = Mutex<[(ContinuousClock.Instant, Value)]>([])
        func record(_ value: Value) {
            let now = ContinuousClock.now
            seen.withLock { $0.append((now, value)) }
        }
        var count: Int { seen.withLock { $0.count } }
        /// Waits (bounded) for an observation after `index` matching `predicate`; its instant.
        func wait(after index: Int, timeout: Duration, _ predicate: (Value) -> Bool) -> ContinuousClock.Instant? {
            let deadline = ContinuousClock.now + timeout
            var cursor = index
            while ContinuousClock.now < deadline {
                let found: ContinuousClock.Instant? = seen.withLock { items in
                    while cursor < items.count {
                        defer { cursor += 1 }
                        if predicate(items[cursor].1) { return items[cursor].0 }
                    }
                    return nil
                }
                if let found { return found }
                usleep(50)
            }
            return nil
        }
    }

    func run() async throws {
        // The lab made the pair and the default route (``runInsideOwnNamespace(arguments:)``).
        let gateway = ProcessInfo.processInfo.environment["NETRES_BENCH_GATEWAY"] ?? ""
        guard gateway.wholeMatch(of: /198\.18\.\d{1,3}\.\d{1,3}/) != nil else {
            throw BenchError("NETRES_BENCH_GATEWAY \(gateway.prefix(40)): want a 198.18.x.y address")
        }
        let local = Int32(if_nametoindex("nrb0"))
        let peer = Int32(if_nametoindex("nrb0p"))
        guard local > 0, peer > 0 else { throw BenchError("nrb0/nrb0p missing: run through `netres-bench netlink`") }

        let floor = Recorder<(Int32, UInt32)>()
        let floorSocket = try RawNetlinkSocket(groups: 1)
        let floorThread = Thread { while floorSocket.readLinks({ floor.record(($0, $1)) }) {} }
        floorThread.start()

        var logger = Logger(label: "netres-bench")
        logger.logLevel = .warning
        let monitor = NetlinkMonitor(filter: InterfaceFilter(["nrb0"]), holdDown: .zero, logger: logger)
        try await monitor.start()
        let raw = Recorder<LinkState>()
        let paths = Recorder<PathTransition.Kind>()
        let events = monitor.events()
        let transitions = monitor.transitions()
        let readers = [
            Task { for await e in events { if case .linkChanged(_, let to) = e.kind { raw.record(to) } } },
            Task { for await t in transitions { paths.record(t.kind) } },
        ]
        guard paths.wait(after: 0, timeout: .seconds(5), { $0 == .initial }) != nil else {
            throw BenchError("no initial transition")
        }

        let changer = try RawNetlinkSocket(groups: 0)
        var admin = Samples()
        var carrier = Samples()
        for i in 0..<changes {
            let up = i % 2 == 1
            let expected = Expectation(
                floor: { $0.ifindex == local && ($0.flags & 0x1 != 0) == up },
                raw: { $0.ifindex == local && $0.isAdminUp == up },
                transition: nil
            )
            try measure(&admin, floor, raw, paths, expected) {
                try changer.setAdminUp(ifindex: local, up, sequence: UInt32(i + 1))
            }
        }
        // Admin down flushed the default route: bring the path back before the carrier phase.
        try shell("ip route replace default via \(gateway) dev nrb0")
        _ = paths.wait(after: 0, timeout: .seconds(2)) { if case .restored = $0 { true } else { false } }
        for i in 0..<changes {
            let up = i % 2 == 1
            let expected = Expectation(
                floor: { $0.ifindex == local && ($0.flags & 0x10000 != 0) == up },
                raw: { $0.ifindex == local && ($0.carrier == .carrier) == up },
                transition: { kind in
                    switch kind {
                    case .restored: up
                    case .lost: !up
                    default: false
                    }
                }
            )
            try measure(&carrier, floor, raw, paths, expected) {
                try changer.setAdminUp(ifindex: peer, up, sequence: UInt32(changes + i + 1))
            }
        }
        for reader in readers { reader.cancel() }
        await monitor.shutdown()
        shutdown(floorSocket.fd, Int32(SHUT_RDWR))

        let idle = try measureIdle()
        report(admin: admin, carrier: carrier, idle: idle.watch, baseline: idle.baseline)
    }

    struct Samples {
        var floor: [Duration] = []
        var raw: [Duration] = []
        var transition: [Duration] = []
        var missed = 0
    }

    /// What each reader must see for one change to count as seen.
    struct Expectation {
        var floor: ((ifindex: Int32, flags: UInt32)) -> Bool
        var raw: (LinkState) -> Bool
        var transition: ((PathTransition.Kind) -> Bool)?
    }

    /// Makes one change and records how long each reader took to see it (bounded at 1 s each).
    private func measure(
        _ samples: inout Samples,
        _ floor: Recorder<(Int32, UInt32)>,
        _ raw: Recorder<LinkState>,
        _ paths: Recorder<PathTransition.Kind>,
        _ expected: Expectation,
        change: () throws -> Void
    ) throws {
        let (f0, r0, p0) = (floor.count, raw.count, paths.count)
        let start = ContinuousClock.now
        try change()
        let floorSeen = floor.wait(after: f0, timeout: .seconds(1)) { expected.floor((ifindex: $0.0, flags: $0.1)) }
        let rawSeen = raw.wait(after: r0, timeout: .seconds(1), expected.raw)
        let pathSeen = expected.transition.flatMap { paths.wait(after: p0, timeout: .seconds(1), $0) }
        guard let floorSeen, let rawSeen, expected.transition == nil || pathSeen != nil else {
            samples.missed += 1
            return
        }
        samples.floor.append(start.duration(to: floorSeen))
        samples.raw.append(start.duration(to: rawSeen))
        if let pathSeen { samples.transition.append(start.duration(to: pathSeen)) }
    }
}
