import ArgumentParser
import ResilienceOutput

extension ResilienceCommand.Ctl {
    /// `netres ctl push ACCOUNT [--kind call|message|refresh] [--payload TEXT]`: hands the daemon
    /// a push notification (RFC 8599), as a push service does when the registrar asks it to wake
    /// the device. Sent as the JSON command, so a payload may hold spaces.
    struct Push: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliver a push notification for an account: it registers at once and stays awake a while.",
            discussion: """
                The daemon logs and counts the push (netres_pushes), runs the hooks (NETRES_EVENT=push) and \
                decides push.received.KIND: by default the account re-registers through a new flow in every app \
                state; while suspended it stays awake for the policy's push-wake-window (10 s), or while it has a \
                call, then sleeps again.
                """)
        @OptionGroup var options: ResilienceCommand.Ctl.SocketOption
        @Argument(help: "The account the push is for.") var account: String
        @Option(help: "What the push is for: call, message or refresh.") var kind = "call"
        @Option(help: "The provider's payload (at most 1024 bytes).") var payload: String?

        func run() throws {
            var members: [(String, JSONValue)] = [
                ("command", .string("push")), ("account", .string(account)), ("kind", .string(kind)),
            ]
            if let payload { members.append(("payload", .string(payload))) }
            try options.send(JSONObject(members).rendered)
        }
    }
}

extension ResilienceCommand.Ctl {
    /// `netres ctl messages [--json]`: the MESSAGEs the accounts received (the newest 100).
    struct Messages: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the SIP MESSAGEs received (the newest 100), e.g. those a push proxy stored while asleep.")
        @OptionGroup var options: ResilienceCommand.Ctl.SocketOption
        @Flag(help: "One JSON object instead of text.") var json = false
        func run() throws { try options.send(json ? "messages --json" : "messages") }
    }
}
