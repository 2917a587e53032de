import ArgumentParser
import Logging
import ResilienceDaemon
import ResilienceHooks
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

extension ResilienceCommand {
    /// Runs the resilience manager with the SIP plugin as a daemon until SIGTERM or SIGINT.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the manager with the SIP accounts of a config file, as a daemon.",
            discussion: """
                Logs every transition, decision, action outcome and call event on standard output, one line \
                each (JSON Lines with log-format: json). Serves `netres ctl` on the config's control-socket, \
                calls included (`netres ctl call`, `calls`, `answer`, `hangup`, `hold`, `resume`); an \
                account's incoming-calls (ring, answer or reject) says what an incoming call does after its \
                180 Ringing. \
                SIGTERM or SIGINT unsubscribes and unregisters within a deadline, then exits. Exit status \
                1 for an invalid config, 2 when netlink or the control socket cannot be opened or another \
                netres run already serves the same control socket.
                """
        )

        @Option(help: ArgumentHelp("The YAML config (see examples/netres.yaml).", valueName: "file"))
        var config: String

        @Option(help: "Diagnostics on standard error: trace, debug, info, notice, warning, error, critical.")
        var logLevel: LogLevelArgument = LogLevelArgument(.notice)

        func run() async throws {
            let settings: DaemonConfig
            let daemon: Daemon
            let logger = logLevel.bootstrap()
            let out = OutputWriter()
            do {
                settings = try DaemonConfigFile.load(path: config)
                daemon = try Daemon(
                    config: settings, output: { await out.write($0) }, logger: logger)
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
            OpenFileLimit.raiseToHard()
            // Collects what a hook started with setsid; netres run starts no other children.
            if settings.hooks != nil { ProcessTree.becomeSubreaper() }
            do {
                try await daemon.start()
            } catch let error as DaemonError {
                printError("netres: \(error)")
                throw ExitCode(2)
            } catch {
                printError("netres: cannot watch the network through netlink: \(error)")
                throw ExitCode(2)
            }
            // Signals through ShutdownSignals, not the group's DispatchSource: idle means asleep.
            let group = daemon.makeGroup(signals: [])
            // SIGCONT: the process was stopped; servers may have dropped what they could not reach.
            ShutdownSignals.install([SIGTERM, SIGINT, SIGCONT]) { signal in
                Task { signal == SIGCONT ? await daemon.processContinued() : await group.triggerGracefulShutdown() }
            }
            do {
                try await group.run()
            } catch {
                await daemon.stop()
                printError("netres: \(error)")
                throw ExitCode(2)
            }
            await daemon.stop()
        }
    }
}
