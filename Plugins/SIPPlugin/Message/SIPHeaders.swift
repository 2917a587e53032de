/// One header line as received or to be sent; `name` keeps the spelling it arrived with.
public struct SIPHeaderField: Hashable, Sendable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The ordered header fields of a SIP message.
///
/// Lookups are case-insensitive and treat compact forms (RFC 3261 §7.3.3, e.g. `i` for
/// `Call-ID`, `m` for `Contact`) as their long names. Order is kept, so `Via` stays in sequence.
public struct SIPHeaders: Hashable, Sendable, Sequence {
    public private(set) var fields: [SIPHeaderField] = []

    public init() {}

    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { SIPHeaderField(name: $0.0, value: $0.1) }
    }

    public func makeIterator() -> IndexingIterator<[SIPHeaderField]> { fields.makeIterator() }

    public var count: Int { fields.count }

    /// The canonical (lower-case, long-form) name of a header.
    public static func canonical(_ name: String) -> String {
        let lower = name.lowercased()
        return compactForms[lower] ?? lower
    }

    /// The first value of the header, if present.
    public subscript(_ name: String) -> String? {
        let key = Self.canonical(name)
        return fields.first { Self.canonical($0.name) == key }?.value
    }

    /// Every occurrence of the header, one string per line, not split at commas.
    public func values(_ name: String) -> [String] {
        let key = Self.canonical(name)
        return fields.filter { Self.canonical($0.name) == key }.map(\.value)
    }

    /// Every element of a list header (`Via`, `Contact`, `Allow`...): all occurrences split at
    /// commas that are outside quoted strings and angle brackets.
    public func listValues(_ name: String) -> [String] {
        values(name).flatMap { SIPHeaders.splitList($0) }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(SIPHeaderField(name: name, value: value))
    }

    /// Replaces every occurrence of `name` with one field (appended when absent).
    public mutating func set(_ name: String, _ value: String) {
        let key = Self.canonical(name)
        let index = fields.firstIndex { Self.canonical($0.name) == key } ?? fields.endIndex
        fields.removeAll { Self.canonical($0.name) == key }
        fields.insert(SIPHeaderField(name: name, value: value), at: Swift.min(index, fields.endIndex))
    }

    public mutating func remove(_ name: String) {
        let key = Self.canonical(name)
        fields.removeAll { Self.canonical($0.name) == key }
    }

    /// Splits a header value at commas outside `"..."` (with `\` escapes) and `<...>`.
    public static func splitList(_ value: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        var angle = 0
        for ch in value {
            if inQuotes {
                current.append(ch)
                if escaped {
                    escaped = false
                } else if ch == "\\" {
                    escaped = true
                } else if ch == "\"" {
                    inQuotes = false
                }
                continue
            }
            switch ch {
            case "\"": inQuotes = true
            case "<": angle += 1
            case ">": angle = Swift.max(0, angle - 1)
            case "," where angle == 0:
                parts.append(current.trimmingSIPWhitespace())
                current = ""
                continue
            default: break
            }
            current.append(ch)
        }
        parts.append(current.trimmingSIPWhitespace())
        return parts.filter { !$0.isEmpty }
    }

    static let compactForms: [String: String] = [
        "i": "call-id", "m": "contact", "f": "from", "t": "to", "v": "via", "l": "content-length",
        "c": "content-type", "k": "supported", "e": "content-encoding", "o": "event", "s": "subject",
        "r": "refer-to", "b": "referred-by", "x": "session-expires", "u": "allow-events", "a": "accept-contact",
        "j": "reject-contact", "d": "request-disposition", "y": "identity", "n": "identity-info",
    ]
}

extension String {
    func trimmingSIPWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
