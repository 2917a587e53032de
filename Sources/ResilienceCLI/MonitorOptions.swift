import ArgumentParser
import Logging
import NetlinkMonitor
import ResilienceCore

/// Options shared by the commands that watch the network.
struct MonitorOptions: ParsableArguments {
    @Option(
        name: [.customLong("interface"), .customShort("i")],
        help: ArgumentHelp(
            "Only count this interface (name or glob such as 'eth*'); repeatable.", valueName: "name|glob")
    )
    var interfaces: [String] = []

    @Option(help: ArgumentHelp("How long a loss must last before it is reported (0 allowed).", valueName: "duration"))
    var holdDown: DurationArgument = DurationArgument(.seconds(2))

    @Option(help: "Diagnostics on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: LogLevelArgument = LogLevelArgument(.notice)

    var filter: InterfaceFilter { InterfaceFilter(interfaces) }

    /// Bootstraps logging to standard error and returns the command's logger.
    func makeLogger() -> Logger { logLevel.bootstrap() }

    /// Starts a monitor or exits with status 2 and a message naming what failed.
    func startMonitor(logger: Logger) async throws -> NetlinkMonitor {
        let monitor = NetlinkMonitor(filter: filter, holdDown: holdDown.duration, logger: logger)
        do {
            try await monitor.start()
        } catch {
            printError("netres: cannot watch the network through netlink: \(error)")
            throw ExitCode(2)
        }
        return monitor
    }
}

/// A `Duration` on the command line: `0`, `500ms`, `2s`, `1m30s`.
struct DurationArgument: ExpressibleByArgument, Sendable {
    var duration: Duration
    init(_ duration: Duration) { self.duration = duration }
    init?(argument: String) {
        guard let parsed = DurationText.parse(argument) else { return nil }
        duration = parsed
    }
    var defaultValueDescription: String { DurationText.format(duration) }
}

/// A swift-log level on the command line.
struct LogLevelArgument: ExpressibleByArgument, Sendable {
    var level: Logger.Level
    init(_ level: Logger.Level) { self.level = level }
    init?(argument: String) {
        guard let level = Logger.Level(rawValue: argument.lowercased()) else { return nil }
        self.level = level
    }
    var defaultValueDescription: String { level.rawValue }

    /// Bootstraps logging to standard error at this level and returns the command's logger.
    func bootstrap() -> Logger {
        let level = level
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "netres")
    }

    static var allValueStrings: [String] { Logger.Level.allCases.map(\.rawValue) }
}
