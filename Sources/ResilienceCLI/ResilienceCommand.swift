import ArgumentParser
import NetlinkMonitor
import ResilienceDaemon

/// `netres`: watch the network the way a real-time client needs it, check policies, and run the
/// resilience manager.
///
/// Exit status: 0 success (for `status`: path satisfied), 1 the asked-for state does not hold
/// (`status` unsatisfied, `wait-online` timed out, a policy file is invalid), 2 a runtime failure
/// (netlink unavailable), 64 a usage error.
@main
struct ResilienceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netres",
        abstract: "Keep a real-time client's services alive across network loss and change.",
        version: "netres \(packageVersion) (libnl \(NetlinkMonitor.libnlVersion))",
        subcommands: [Watch.self, Status.self, WaitOnline.self, Policy.self, Run.self, Ctl.self, Lab.self]
    )

    /// The package's version; bumped with each release tag.
    static let packageVersion = "0.1.0"

    /// Takes the concurrency runtime off libdispatch's worker pool before the first task exists,
    /// so an idle `netres` makes no wake-ups of its own (``QuietConcurrencyRuntime``).
    static func main() async {
        if !QuietConcurrencyRuntime.install() {
            printError("netres: the concurrency runtime stays on libdispatch; idle wake-ups continue")
        }
        await main(nil)
    }
}
