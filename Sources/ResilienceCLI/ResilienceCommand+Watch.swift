import ArgumentParser
import Logging
import NetlinkMonitor
import ResilienceCore
import ResilienceHooks
import ResilienceOutput
import ServiceLifecycle
import UnixSignals

extension ResilienceCommand {
    /// Prints the current path, then every transition (and with `--raw` every raw event), one
    /// line each, until SIGINT or SIGTERM.
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the network path, then each transition as it happens.",
            discussion: """
                Lines start with an RFC 3339 timestamp. With --json every line is a JSON object with the \
                keys ts, mono_ns, seq, kind (transition|event), event, iface, ifindex, from, to, reason, \
                addresses, synthesized and downtime_ms. Stops cleanly on SIGINT or SIGTERM.

                With --hooks DIR every executable file of DIR runs (sorted by name, without a shell, one \
                at a time; only files and a directory owned by root or this user and writable by no one \
                else, others are skipped and logged) on each transition printed, with NETRES_EVENT, NETRES_REASON, NETRES_CHANGE, \
                NETRES_STATUS, NETRES_INTERFACE, NETRES_IFINDEX, NETRES_ADDRESSES, NETRES_DOWNTIME_MS and \
                NETRES_TIME in its environment. While hooks run, newer transitions replace older waiting ones.
                """
        )

        @OptionGroup var monitor: MonitorOptions
        @Flag(help: "Print JSON Lines instead of human-readable lines.") var json = false
        @Flag(help: "Also print every raw netlink event (link, address, default route, resync).") var raw = false
        @Option(help: ArgumentHelp("Run the executables of this directory on each transition.", valueName: "dir"))
        var hooks: String?
        @Option(help: ArgumentHelp("How long one hook may run before it is killed.", valueName: "duration"))
        var hookTimeout: DurationArgument = DurationArgument(.seconds(10))

        func validate() throws {
            guard hookTimeout.duration > .zero else { throw ValidationError("--hook-timeout must be positive") }
        }

        func run() async throws {
            let logger = monitor.makeLogger()
            let runner = try hooks.map { directory in
                guard HookRunner.isDirectory(directory) else {
                    printError("netres: --hooks \(directory) is not a directory")
                    throw ExitCode(2)
                }
                // Collects what a hook started with setsid; netres watch starts no other children.
                ProcessTree.becomeSubreaper()
                return HookRunner(directory: directory, timeout: hookTimeout.duration, logger: logger)
            }
            let netlink = try await monitor.startMonitor(logger: logger)
            let printer = WatchPrinter(monitor: netlink, json: json, raw: raw, hooks: runner)
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: printer)],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                )
            )
            try await group.run()
            await runner?.stop()
            await netlink.shutdown()
        }
    }
}

/// Streams the monitor's output to standard output until graceful shutdown.
struct WatchPrinter: Service {
    let monitor: NetlinkMonitor
    let json: Bool
    let raw: Bool
    /// Runs hooks on each transition printed; nil runs none.
    let hooks: HookRunner?

    func run() async throws {
        let clock = WallClock()
        let out = OutputWriter()
        let transitions = monitor.transitions()
        let events = raw ? monitor.events() : nil
        let names = InterfaceNames(monitor.snapshot())
        let hooks = hooks
        let render: @Sendable (WatchRecord) -> String = { [json] in
            json ? $0.json(clock: clock) : $0.human(clock: clock)
        }
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    var seq: UInt64 = 0
                    for await transition in transitions {
                        seq += 1
                        await out.write(render(WatchRecord(transition, seq: seq)))
                        hooks?.submit(transition)
                    }
                }
                if let events {
                    group.addTask {
                        for await event in events {
                            let record = WatchRecord(event, name: await names.update(with: event))
                            await out.write(render(record))
                        }
                    }
                }
            }
        }
    }
}

/// Interface names by index, kept current from link events so address and route events (which
/// carry only an index) print a name — also for a link that was just removed.
actor InterfaceNames {
    private var names: [Int32: String]

    init(_ snapshot: NetworkSnapshot) {
        names = snapshot.links.mapValues(\.name)
    }

    /// Records what `event` says about names and returns the lookup to print it with.
    func update(with event: NetworkEvent) -> @Sendable (Int32) -> String? {
        switch event.kind {
        case .linkAdded(let link), .linkChanged(_, let link), .linkRemoved(let link): names[link.ifindex] = link.name
        default: break
        }
        let current = names
        return { current[$0] }
    }
}
