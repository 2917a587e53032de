internal import Foundation
public import ResilienceCore

/// One request on the control socket: a text line (`state background`, `status --json`,
/// `push-token alice TOKEN`) or a JSON object on one line (`{"command":"state","state":"background"}`,
/// `{"command":"status","json":true}`, `{"command":"push-token","account":"alice","token":"..."}`).
///
/// Replies are text ending in a newline; a failed command's reply starts with `error: `.
public enum ControlCommand: Hashable, Sendable {
    case state(AppState)
    case status(json: Bool)
    case pushToken(account: String, token: String)

    /// Parses one line.
    /// - Throws: ``DaemonError`` with a message fit to send back as `error: ...`.
    public static func parse(_ line: String) throws(DaemonError) -> ControlCommand {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") { return try parseJSON(trimmed) }
        let words = trimmed.split(whereSeparator: \.isWhitespace).map(String.init)
        switch (words.first, words.count) {
        case ("state", 2): return try state(words[1])
        case ("status", 1): return .status(json: false)
        case ("status", 2) where words[1] == "--json": return .status(json: true)
        case ("push-token", 3): return try pushToken(words[1], words[2])
        default: throw DaemonError(usage)
        }
    }

    public static let usage =
        "expected one of: state foreground|background|suspended; status [--json]; push-token ACCOUNT TOKEN"

    private static func parseJSON(_ text: String) throws(DaemonError) -> ControlCommand {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let command = object["command"] as? String
        else { throw DaemonError("not a JSON object with a \"command\" string") }
        switch command {
        case "state": return try state(object["state"] as? String ?? "")
        case "status": return .status(json: object["json"] as? Bool ?? false)
        case "push-token":
            return try pushToken(object["account"] as? String ?? "", object["token"] as? String ?? "")
        default: throw DaemonError("unknown command \"\(command)\"; " + usage)
        }
    }

    private static func state(_ word: String) throws(DaemonError) -> ControlCommand {
        guard let state = AppState(rawValue: word) else {
            throw DaemonError("unknown app state \"\(word)\"; expected foreground, background or suspended")
        }
        return .state(state)
    }

    private static func pushToken(_ account: String, _ token: String) throws(DaemonError) -> ControlCommand {
        guard !account.isEmpty, PushTokenStore.isValid(token) else {
            throw DaemonError("push-token needs an account and a token of letters, digits and -._:~")
        }
        return .pushToken(account: account, token: token)
    }
}
