/// Why a policy file was rejected, and where.
///
/// Invariant: every error names the file, a 1-based line and column, what was expected there and,
/// when a near miss exists, a hint (the nearest valid name by edit distance).
public struct PolicyFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The class of problem, stable for tests and `--json` output.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let unreadable = Code(rawValue: "unreadable")
        public static let notUTF8 = Code(rawValue: "not-utf8")
        public static let empty = Code(rawValue: "empty")
        public static let syntax = Code(rawValue: "syntax")
        public static let unknownKey = Code(rawValue: "unknown-key")
        public static let missingKey = Code(rawValue: "missing-key")
        public static let duplicateKey = Code(rawValue: "duplicate-key")
        public static let unknownName = Code(rawValue: "unknown-name")
        public static let wrongType = Code(rawValue: "wrong-type")
        public static let invalidValue = Code(rawValue: "invalid-value")
        public static let contradiction = Code(rawValue: "contradiction")
    }

    public var code: Code
    public var file: String
    public var line: Int
    public var column: Int
    /// What is wrong, e.g. `unknown action "subscibe"`.
    public var message: String
    /// What the file should have had there.
    public var expected: String
    /// A suggestion, e.g. `did you mean "subscribe"?`.
    public var hint: String?

    public init(
        _ code: Code, file: String, line: Int, column: Int, message: String, expected: String, hint: String? = nil
    ) {
        self.code = code
        self.file = file
        self.line = max(line, 1)
        self.column = max(column, 1)
        self.message = message
        self.expected = expected
        self.hint = hint
    }

    /// `FILE:LINE:COLUMN: error: MESSAGE`, then `expected:` and `hint:` lines (compiler style).
    public var description: String {
        var text = "\(file):\(line):\(column): error: \(message)\n  expected: \(expected)"
        if let hint { text += "\n  hint: \(hint)" }
        return text
    }
}

/// Nearest valid names by Levenshtein distance, for error hints.
public enum NameHint {
    /// Words that mean a key of another section, or say in plain English what a key says: `for`
    /// in a level row means `service`, `service` in a rule means `for`, `actions` means `do`.
    /// Spelling distance alone would suggest `foreground` for `for`.
    static let meanings: [String: [String]] = [
        "for": ["service"], "service": ["for"], "services": ["for", "service"], "trigger": ["on"],
        "triggers": ["on"], "state": ["when"], "states": ["when"], "action": ["do"], "actions": ["do"],
        "condition": ["if"], "conditions": ["if"],
    ]

    /// `did you mean "x"?` for a key of the same meaning (`meanings`), else the closest candidate
    /// within a third of the word's length (at least 2), or one that the word abbreviates or
    /// extends (`maximum` → `max`), or one that has every dotted part of the word
    /// (`call.active` → `call.outgoing.active`).
    public static func suggestion(for word: String, among candidates: [String]) -> String? {
        let word = word.lowercased()
        if let same = meanings[word]?.first(where: candidates.contains) { return "did you mean \"\(same)\"?" }
        let limit = max(2, word.count / 3)
        let scored = candidates.map { ($0, distance(word, $0.lowercased())) }
        if let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= limit { return "did you mean \"\(best.0)\"?" }
        let affix = candidates.first { c in
            let c = c.lowercased()
            return min(c.count, word.count) >= 3 && (c.hasPrefix(word) || word.hasPrefix(c))
        }
        // A dotted name missing a part: `call.active` -> `call.outgoing.active`.
        let parts = Set(word.split(separator: "."))
        let widened = candidates.first { c in
            parts.count > 1 && parts.isSubset(of: c.lowercased().split(separator: "."))
        }
        return (affix ?? widened).map { "did you mean \"\($0)\"?" }
    }

    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            previous = current
        }
        return previous[b.count]
    }
}
