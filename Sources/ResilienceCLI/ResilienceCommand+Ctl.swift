import ArgumentParser
import ResilienceDaemon

extension ResilienceCommand {
    /// Talks to a running `netres run` over its control socket.
    struct Ctl: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Control a running `netres run`: app state, status, push token, push, calls.",
            discussion: "Exit status 1 when the daemon answers with an error, 2 when it cannot be reached.",
            subcommands: [
                State.self, Status.self, PushToken.self, Push.self, Messages.self, Call.self, Answer.self, Hangup.self,
                Hold.self, Resume.self,
                Interruption.self, Calls.self, Events.self,
            ]
        )

        /// Lets `--socket` stand before the subcommand too (`netres ctl --socket PATH status`).
        @OptionGroup var options: SocketOption

        struct SocketOption: ParsableArguments {
            @Option(help: ArgumentHelp("The daemon's control socket.", valueName: "path"))
            var socket: String = DaemonConfig.defaultControlSocket

            /// Sends `line` and prints the reply; exit status 1 on an `error:` reply.
            func send(_ line: String) throws {
                let reply: String
                do {
                    reply = try ControlClient.send(line, socket: socket)
                } catch {
                    printError("netres ctl: \(error)")
                    throw ExitCode(2)
                }
                guard !reply.hasPrefix("error:") else {
                    printError("netres ctl: " + reply.dropLast(reply.hasSuffix("\n") ? 1 : 0))
                    throw ExitCode(1)
                }
                print(reply, terminator: "")
            }
        }

        struct State: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Set the app state.")
            @OptionGroup var options: SocketOption
            @Argument(help: "foreground, background or suspended") var state: String
            func run() throws { try options.send("state \(state)") }
        }

        struct Status: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show path, app state, epoch, services with their last outcome, push availability.")
            @OptionGroup var options: SocketOption
            @Flag(help: "One JSON object instead of text.") var json = false
            func run() throws { try options.send(json ? "status --json" : "status") }
        }

        struct PushToken: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "push-token", abstract: "Store an account's push token and re-register with it.")
            @OptionGroup var options: SocketOption
            @Argument var account: String
            @Argument var token: String
            func run() throws { try options.send("push-token \(account) \(token)") }
        }
    }
}
