import ArgumentParser
import ResilienceDaemon
import ResilienceOutput

extension ResilienceCommand.Ctl {
    struct Call: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Place a call from an account; prints its id once the INVITE goes out.",
            discussion: "The URI is sip: or sips:, an optional user@, a host and an optional :port. "
                + "Follow the call with `netres ctl calls` or the daemon's log.")
        @OptionGroup var options: SocketOption
        @Argument(help: "The account's name in the config.") var account: String
        @Argument(help: ArgumentHelp("Whom to call, e.g. sip:bob@example.com.", valueName: "uri")) var uri: String
        func run() throws {
            try options.send(#"{"command":"call","account":\#(quoted(account)),"uri":\#(quoted(uri))}"#)
        }
    }

    struct Answer: CallControlCommand {
        static let configuration = CommandConfiguration(abstract: "Answer a ringing incoming call (echo media).")
        static let control = CallControl.answer
        @OptionGroup var options: SocketOption
        @Argument(help: "The call's id, from `netres ctl calls`.") var id: String
    }

    struct Hangup: CallControlCommand {
        static let configuration = CommandConfiguration(
            abstract: "End a call: BYE, CANCEL while ringing out, 603 while ringing in.")
        static let control = CallControl.hangup
        @OptionGroup var options: SocketOption
        @Argument(help: "The call's id, from `netres ctl calls`.") var id: String
    }

    struct Hold: CallControlCommand {
        static let configuration = CommandConfiguration(abstract: "Hold an established call (re-INVITE sendonly).")
        static let control = CallControl.hold
        @OptionGroup var options: SocketOption
        @Argument(help: "The call's id, from `netres ctl calls`.") var id: String
    }

    struct Resume: CallControlCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resume a call held with `netres ctl hold` (re-INVITE sendrecv).",
            discussion: "A call an interruption also holds stays held until `netres ctl interruption end`.")
        static let control = CallControl.resume
        @OptionGroup var options: SocketOption
        @Argument(help: "The call's id, from `netres ctl calls`.") var id: String
    }

    struct Interruption: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The system takes (begin) or gives back (end) the media path: calls are held, then resumed.")
        @OptionGroup var options: SocketOption
        @Argument(help: "begin or end") var phase: String
        func run() throws { try options.send("interruption \(phase)") }
    }

    struct Calls: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the calls: id, account, peer, state, direction, media address, RTP received, last recovery."
        )
        @OptionGroup var options: SocketOption
        @Flag(help: "One JSON object instead of text.") var json = false
        func run() throws { try options.send(json ? "calls --json" : "calls") }
    }
}

/// `answer`, `hangup`, `hold` and `resume`: one call id each, sent as one JSON request line, so
/// whatever the user typed reaches the daemon's checks intact, never split into more words.
protocol CallControlCommand: ParsableCommand {
    static var control: CallControl { get }
    var options: ResilienceCommand.Ctl.SocketOption { get }
    var id: String { get }
}

extension CallControlCommand {
    func run() throws { try options.send(#"{"command":"\#(Self.control.rawValue)","id":\#(quoted(id))}"#) }
}

private func quoted(_ text: String) -> String { JSONValue.quote(text) }
