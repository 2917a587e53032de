import ArgumentParser
import ResilienceDaemon

extension ResilienceCommand.Ctl {
    /// `netres ctl events`: the daemon's transitions, app-state changes, decisions and action
    /// outcomes as they happen, one JSON object per line, until interrupted.
    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stream the daemon's transitions, app-state changes, decisions and outcomes as JSON lines.",
            discussion: """
                The first line is the daemon's welcome ({"type":"welcome",...}, sent once subscribed); each \
                line after it is one event of the daemon's JSON log with "type":"event" first. A reader that \
                falls more than 1024 lines behind loses lines instead of slowing the daemon: a line \
                {"type":"dropped","count":N} stands where they were. The small netres-ctl program prints \
                the same with `netres-ctl events`, and any client gets it on the control socket by sending \
                the line `events` (see the article "External plugins").
                """)
        @OptionGroup var options: ResilienceCommand.Ctl.SocketOption
        @Option(help: "Stop after this many lines (default: run until interrupted).") var count: Int?

        func run() throws {
            var left = count ?? -1
            do {
                try ControlClient.stream("events", socket: options.socket) { line in
                    printLine(line)
                    left -= 1
                    return left != 0
                }
            } catch {
                printError("netres ctl: \(error)")
                throw ExitCode(2)
            }
        }
    }
}
