internal import Foundation
public import ResilienceCore

/// One request on the control socket: a text line (`state background`, `status --json`,
/// `push-token alice TOKEN`, `call alice sip:bob@example.com`, `hold ID`, `calls --json`) or a JSON
/// object on one line (`{"command":"state","state":"background"}`, `{"command":"status","json":true}`,
/// `{"command":"push-token","account":"alice","token":"..."}`, `{"command":"call","account":"alice",
/// "uri":"sip:bob@example.com"}`, `{"command":"hold","id":"ID"}`, `{"command":"interruption","phase":"begin"}`,
/// `push alice --kind message --payload ID`, `{"command":"push","account":"alice","kind":"call","payload":"..."}`).
///
/// Invariant: a parsed call URI passed ``CallURI/problem(_:)`` and a parsed call id ``CallURI/idProblem(_:)``,
/// so neither can carry a header break or a space into a request or a log line.
///
/// Replies are text ending in a newline; a failed command's reply starts with `error: `.
public enum ControlCommand: Hashable, Sendable {
    case state(AppState)
    case status(json: Bool)
    case pushToken(account: String, token: String)
    /// Place a call from `account` to `uri`.
    case call(account: String, uri: String)
    /// Answer, hang up, hold or resume the call `id`.
    case callControl(CallControl, id: String)
    /// The app's interruption begins (`true`) or ends.
    case interruption(begins: Bool)
    /// The calls that are not over.
    case calls(json: Bool)
    /// A push notification for an account (RFC 8599), checked by ``Push``.
    case push(Push)
    /// The MESSAGEs received (the newest 100).
    case messages(json: Bool)

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
        case ("call", 3): return try call(words[1], words[2])
        case ("interruption", 2): return try interruption(words[1])
        case ("push", 2...): return try push(words)
        case ("messages", 1): return .messages(json: false)
        case ("messages", 2) where words[1] == "--json": return .messages(json: true)
        case ("calls", 1): return .calls(json: false)
        case ("calls", 2) where words[1] == "--json": return .calls(json: true)
        case (let word?, 2) where CallControl(rawValue: word) != nil:
            return try callControl(CallControl(rawValue: word)!, words[1])
        default: throw DaemonError(usage)
        }
    }

    public static let usage =
        "expected one of: state foreground|background|suspended; status [--json]; push-token ACCOUNT TOKEN; "
        + "call ACCOUNT URI; answer|hangup|hold|resume ID; interruption begin|end; calls [--json]; "
        + "push ACCOUNT [--kind call|message|refresh] [--payload TEXT]; messages [--json]"

    private static func parseJSON(_ text: String) throws(DaemonError) -> ControlCommand {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let command = object["command"] as? String
        else { throw DaemonError("not a JSON object with a \"command\" string") }
        switch command {
        case "state": return try state(object["state"] as? String ?? "")
        case "status": return .status(json: object["json"] as? Bool ?? false)
        case "push-token":
            return try pushToken(object["account"] as? String ?? "", object["token"] as? String ?? "")
        case "call": return try call(object["account"] as? String ?? "", object["uri"] as? String ?? "")
        case "interruption": return try interruption(object["phase"] as? String ?? "")
        case "calls": return .calls(json: object["json"] as? Bool ?? false)
        case "messages": return .messages(json: object["json"] as? Bool ?? false)
        case "push":
            return try push(
                account: object["account"] as? String ?? "", kind: object["kind"] as? String ?? "call",
                payload: object["payload"] as? String)
        case let word where CallControl(rawValue: word) != nil:
            return try callControl(CallControl(rawValue: word)!, object["id"] as? String ?? "")
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

    private static func call(_ account: String, _ uri: String) throws(DaemonError) -> ControlCommand {
        guard !account.isEmpty, account.utf8.count <= 64, !account.contains(where: \.isWhitespace) else {
            throw DaemonError("call needs an account name (at most 64 characters) and a SIP URI")
        }
        if let problem = CallURI.problem(uri) { throw DaemonError("call URI \(problem)") }
        return .call(account: account, uri: uri)
    }

    private static func callControl(_ control: CallControl, _ id: String) throws(DaemonError) -> ControlCommand {
        if let problem = CallURI.idProblem(id) { throw DaemonError("\(control.rawValue): call id \(problem)") }
        return .callControl(control, id: id)
    }

    /// `push ACCOUNT [--kind KIND] [--payload TEXT]`: each option at most once, in any order.
    private static func push(_ words: [String]) throws(DaemonError) -> ControlCommand {
        var (kind, payload): (String?, String?) = (nil, nil)
        var index = 2
        while index < words.count {
            guard index + 1 < words.count else { throw DaemonError("push: \(words[index]) needs a value; " + usage) }
            switch words[index] {
            case "--kind" where kind == nil: kind = words[index + 1]
            case "--payload" where payload == nil: payload = words[index + 1]
            default:
                throw DaemonError("push: unexpected \"\(LogText.escaped(words[index], limit: 32))\"; " + usage)
            }
            index += 2
        }
        return try push(account: words[1], kind: kind ?? "call", payload: payload)
    }

    private static func push(account: String, kind: String, payload: String?) throws(DaemonError) -> ControlCommand {
        guard let pushKind = PushKind(rawValue: kind) else {
            throw DaemonError(
                "push: unknown kind \"\(LogText.escaped(kind, limit: 32))\"; expected call, message or refresh")
        }
        do {
            return .push(try Push(account: account, kind: pushKind, payload: payload))
        } catch {
            throw DaemonError("push: \(error)")
        }
    }

    private static func interruption(_ word: String) throws(DaemonError) -> ControlCommand {
        switch word {
        case "begin": return .interruption(begins: true)
        case "end": return .interruption(begins: false)
        default:
            throw DaemonError(
                "unknown interruption phase \"\(LogText.escaped(word, limit: 32))\"; expected begin or end")
        }
    }
}

/// What `netres ctl` can do to one call.
public enum CallControl: String, Hashable, Sendable, CaseIterable {
    case answer
    case hangup
    case hold
    case resume
}
