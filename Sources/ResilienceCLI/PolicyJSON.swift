import ResilienceOutput
import ResiliencePolicyFile

/// The JSON shapes of `netres policy --json`, written with the project's one JSON writer.
///
/// Invariant: a nil optional is left out (never `null`), as these documents always printed it.
extension PolicyExplanation {
    var json: JSONValue {
        .object(
            JSONObject([
                ("state", .string(state)), ("trigger", .string(trigger)), ("stateAfter", .string(stateAfter)),
                ("setup", .array(setup.map(JSONValue.string))), ("services", .array(services.map(\.json))),
            ]))
    }
}

extension PolicyExplanation.Service {
    var json: JSONValue {
        var members: [(String, JSONValue)] = [("id", .string(id)), ("kind", .string(kind))]
        if let account { members.append(("account", .string(account))) }
        members.append(("level", .string(level)))
        if let row { members.append(("row", .string(row))) }
        if let note { members.append(("note", .string(note))) }
        members.append(("actions", .array(actions.map(\.json))))
        return .object(JSONObject(members))
    }
}

extension PolicyExplanation.Step {
    var json: JSONValue {
        .object(
            JSONObject([
                ("order", .int(Int64(order))), ("action", .string(action)),
                ("after", .array(after.map(JSONValue.string))), ("source", .string(source)),
            ]))
    }
}

extension PolicyFileError {
    /// `{"valid": false, "error": {...}}` for `policy check --json` and `policy explain --json`.
    var jsonReport: JSONValue {
        var body: [(String, JSONValue)] = [
            ("code", .string(code.rawValue)), ("file", .string(file)), ("line", .int(Int64(line))),
            ("column", .int(Int64(column))), ("message", .string(message)), ("expected", .string(expected)),
        ]
        if let hint { body.append(("hint", .string(hint))) }
        return .object(JSONObject([("valid", .bool(false)), ("error", .object(JSONObject(body)))]))
    }
}
