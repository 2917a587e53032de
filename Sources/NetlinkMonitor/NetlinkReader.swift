import Glibc
import Logging
import ResilienceCore

/// The reader thread's state and loop. Confined to that thread (never shared), so it needs no
/// lock; it reaches the outside world only through the monitor's mutex-guarded methods.
///
/// Invariants: the event socket joins its groups before the initial dump, so nothing falls
/// between dump and events (replays of older events are idempotent); every wake-up reads until
/// `EAGAIN` (bounded per wake-up so commands are still seen under a flood); poll's timeout is the
/// tracker's one deadline, or infinite, so an idle monitor never wakes up.
final class NetlinkReader {
    typealias Batch = [(kind: NetworkEvent.Kind, synthesized: Bool)]

    /// Datagrams read per wake-up before the loop looks at commands and timers again.
    static let maxDatagramsPerWakeUp = 4096
    /// Attempts at a consistent dump before giving up on this try.
    static let dumpAttempts = 16

    private let monitor: NetlinkMonitor
    private let events: NetlinkSocket
    private let dumper: NetlinkSocket
    private var cache: LinkCache
    private var deadline: ContinuousClock.Instant?
    private var logger: Logger { monitor.logger }

    private init(monitor: NetlinkMonitor, events: consuming NetlinkSocket, dumper: consuming NetlinkSocket) {
        self.monitor = monitor
        self.events = events
        self.dumper = dumper
        self.cache = LinkCache()
    }

    /// The thread's entry point: set up, publish the initial dump, loop until shutdown.
    static func run(for monitor: NetlinkMonitor) {
        defer { monitor.readerExited() }
        let reader: NetlinkReader
        do {
            if let namespace = monitor.namespace { try NetlinkSocket.enterNamespace(named: namespace) }
            let events = try NetlinkSocket(groups: NetlinkSocket.eventGroups, nonBlocking: true)
            let granted = events.setReceiveBuffer(monitor.receiveBufferSize)
            monitor.logger.info(
                "netlink monitor started",
                metadata: [
                    "netlink.rcvbuf.requested": "\(monitor.receiveBufferSize)", "netlink.rcvbuf.granted": "\(granted)",
                    "netlink.namespace": "\(monitor.namespace ?? "-")",
                ])
            reader = NetlinkReader(monitor: monitor, events: events, dumper: try NetlinkSocket())
            reader.cache = LinkCache(try reader.dumpAll())
            reader.deadline = monitor.readerStarted(reader.cache.snapshot, grantedBuffer: granted, at: .now)
        } catch {
            monitor.readerFailed(error)
            return
        }
        reader.loop()
    }

    private func loop() {
        var fds = [pollfd(fd: monitor.wakePipe.readEnd, events: Int16(POLLIN), revents: 0), pollfd()]
        while true {
            let commands = monitor.takeCommands()
            if commands.stop { return }
            if !commands.dumpChecks.isEmpty { answer(commands.dumpChecks, paused: commands.paused) }
            fds[1] = pollfd(fd: commands.paused ? -1 : events.fileDescriptor, events: Int16(POLLIN), revents: 0)
            fds[0].revents = 0
            let ready = poll(&fds, 2, timeoutMilliseconds())
            if ready < 0, errno != EINTR {
                logger.error("netlink poll failed", metadata: ["errno": "\(errno)"])
                return
            }
            if fds[0].revents != 0 { monitor.wakePipe.drain() }
            if fds[1].revents != 0 { readAll() }
            if let deadline, ContinuousClock.now >= deadline { self.deadline = monitor.fireTimer(at: .now) }
        }
    }

    /// Poll's timeout: infinite without a deadline, else the time left rounded up to a millisecond.
    private func timeoutMilliseconds() -> Int32 {
        guard let deadline else { return -1 }
        let left = deadline - .now
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// Reads until the socket is empty, then publishes the batch.
    private func readAll() {
        var batch: Batch = []
        var drained = false
        reading: for _ in 0..<Self.maxDatagramsPerWakeUp {
            do {
                switch try events.receive() {
                case .empty:
                    drained = true
                    break reading
                case .datagram(let frames):
                    for frame in frames { batch += cache.apply(frame.message).map { ($0, false) } }
                case .overrun:
                    logger.warning("netlink receive buffer overran; resynchronising from a dump")
                    batch += resync()
                    drained = true
                    break reading
                }
            } catch {
                logger.error("netlink read failed; resynchronising", metadata: ["error": "\(error)"])
                batch += resync()
                drained = true
                break reading
            }
        }
        // Only on an empty queue: a stale queued RTM_NEWROUTE must not undo what the dump shows.
        if drained, cache.routesNeedRecheck { batch += recheckRoutes() }
        guard !batch.isEmpty else { return }
        deadline = monitor.publish(batch, snapshot: cache.snapshot, at: .now)
    }

    /// Rebuilds the cache from a dump: the difference as synthesized events, then `.resynced`.
    ///
    /// The queue is discarded first: after an overrun some of its messages lost their
    /// successors (a queued RTM_NEWLINK whose RTM_DELLINK was dropped would resurrect a deleted
    /// link if replayed after the dump). Everything queued after the discard is newer than the
    /// discard and is replayed safely.
    private func resync() -> Batch {
        discardQueue()
        do {
            let fresh = try dumpAll()
            let kinds = cache.snapshot.changes(to: fresh)
            cache.apply(kinds)
            cache.routesNeedRecheck = false
            logger.info("netlink resynchronised", metadata: ["changes": "\(kinds.count)"])
            return kinds.map { ($0, true) } + [(.resynced, true)]
        } catch {
            logger.error("netlink resync failed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Reads and drops everything queued on the event socket (bounded).
    private func discardQueue() {
        for _ in 0..<(Self.maxDatagramsPerWakeUp * 16) {
            guard let received = try? events.receive() else { continue }
            if case .empty = received { return }
        }
    }

    /// Re-reads the routes after a change that may have flushed some without notification.
    private func recheckRoutes() -> Batch {
        cache.routesNeedRecheck = false
        do {
            for _ in 0..<Self.dumpAttempts {
                guard let messages = try dumper.dump(.routes) else { continue }
                let routes = Set(
                    messages.flatMap { message -> [DefaultRoute] in
                        if case .newRoute(let r, _) = message { r } else { [] }
                    })
                let kinds = cache.snapshot.routeChanges(to: routes)
                cache.apply(kinds)
                return kinds.map { ($0, true) }
            }
        } catch {
            logger.error("netlink route recheck failed", metadata: ["error": "\(error)"])
        }
        return []
    }

    /// A consistent dump of links, addresses and default routes.
    private func dumpAll() throws(NetlinkError) -> NetworkSnapshot {
        for _ in 0..<Self.dumpAttempts {
            guard let links = try dumper.dump(.links), let addresses = try dumper.dump(.addresses),
                let routes = try dumper.dump(.routes)
            else { continue }
            var fresh = LinkCache()
            for message in links + addresses + routes { _ = fresh.apply(message) }
            return fresh.snapshot
        }
        throw NetlinkSocket.error(-NetlinkSocket.dumpInterrupted, "dump kept being interrupted by changes")
    }

    /// Reads what is queued (unless paused), then answers each check with the cache and a dump.
    private func answer(_ checks: [CheckedContinuation<NetlinkMonitor.DumpCheck, any Error>], paused: Bool) {
        if !paused { readAll() }
        do {
            let fresh = try dumpAll()
            for check in checks { check.resume(returning: .init(cache: cache.snapshot, fresh: fresh)) }
        } catch {
            for check in checks { check.resume(throwing: error) }
        }
    }
}
