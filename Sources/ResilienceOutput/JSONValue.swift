/// The project's one JSON writer: a value rendered by hand, compact, in the key order given.
///
/// Invariants: strings are escaped per RFC 8259 (control characters as `\u00xx`), a non-finite
/// double renders as `null`, and the same value always renders to the same bytes, so `netres
/// watch --json`, `netres status --json` and the daemon's JSON log lines are stable to diff.
package enum JSONValue: Equatable, Sendable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case array([JSONValue])
    case object(JSONObject)
    case null

    package var rendered: String {
        switch self {
        case .string(let s): Self.quote(s)
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? String(d) : "null"
        case .bool(let b): b ? "true" : "false"
        case .array(let items): "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .object(let o): o.rendered
        case .null: "null"
        }
    }

    /// RFC 8259 string escaping.
    package static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// An ordered JSON object.
package struct JSONObject: Equatable, Sendable {
    package var members: [(String, JSONValue)]
    package init(_ members: [(String, JSONValue)]) { self.members = members }

    package var rendered: String {
        "{" + members.map { JSONValue.quote($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
    }

    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.map(\.0) == rhs.members.map(\.0) && lhs.members.map(\.1) == rhs.members.map(\.1)
    }
}

extension JSONValue {
    /// The same value laid out for people: two spaces per level, ` : ` after each key, every
    /// array and object member on its own line, as `JSONEncoder`'s `.prettyPrinted` lays it out
    /// (the layout `netres policy --json` has always printed). Scalars render as in ``rendered``.
    package var prettyRendered: String { pretty(depth: 0) }

    /// The same value with every object's members sorted by key, at every depth.
    package func sortingKeys() -> JSONValue {
        switch self {
        case .array(let items): .array(items.map { $0.sortingKeys() })
        case .object(let o): .object(JSONObject(o.members.map { ($0.0, $0.1.sortingKeys()) }.sorted { $0.0 < $1.0 }))
        default: self
        }
    }

    private func pretty(depth: Int) -> String {
        let inner = String(repeating: "  ", count: depth + 1)
        let outer = String(repeating: "  ", count: depth)
        switch self {
        case .array(let items):
            let lines = items.map { inner + $0.pretty(depth: depth + 1) }
            return "[\n" + lines.joined(separator: ",\n") + "\n" + outer + "]"
        case .object(let o):
            let lines = o.members.map { inner + Self.quote($0.0) + " : " + $0.1.pretty(depth: depth + 1) }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + outer + "}"
        default: return rendered
        }
    }
}
