import ArgumentParser
import NetlinkMonitor
import ResilienceCore
import ResilienceDaemon

extension ResilienceCommand {
    /// Blocks until the path is satisfied; exit 0 then, 1 with the reason on timeout.
    struct WaitOnline: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wait-online",
            abstract: "Wait until the network path is satisfied (exit 0), or time out (exit 1 with the reason)."
        )

        @OptionGroup var monitor: MonitorOptions
        @Option(help: ArgumentHelp("How long to wait.", valueName: "duration"))
        var timeout: DurationArgument = DurationArgument(.seconds(120))

        func run() async throws {
            let logger = monitor.makeLogger()
            let netlink = try await monitor.startMonitor(logger: logger)
            do {
                // An event-loop timer: `Task.sleep` would wake the process once a second.
                let clock = EventLoopClock.onSingletonGroup()
                let path = try await netlink.waitUntilSatisfied(timeout: timeout.duration, clock: clock)
                await netlink.shutdown()
                print("online via \(path.primaryInterface?.name ?? "?")")
            } catch {
                await netlink.shutdown()
                printError("netres: \(error)")
                throw ExitCode(1)
            }
        }
    }
}
