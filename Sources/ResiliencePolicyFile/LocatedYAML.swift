import ResilienceCore
import ResilienceRules
public import Yams

/// Walks a composed YAML node tree, checking every key, type and name, and keeping marks.
///
/// Invariant: each helper either returns a value or throws a located ``PolicyFileError``.
/// Public so other YAML files of the package (the `netres run` config) report errors the same way.
public struct LocatedYAML {
    public var file: String

    public init(file: String) { self.file = file }

    /// A key of a mapping with its position and value.
    public struct Entry {
        public var key: String
        public var line: Int
        public var column: Int
        public var value: Node
    }

    public func location(_ node: Node) -> (Int, Int) {
        guard let mark = node.mark else { return (1, 1) }
        return (mark.line, mark.column)
    }

    public func fail(
        _ code: PolicyFileError.Code, at node: Node, _ message: String, expected: String, hint: String? = nil
    ) -> PolicyFileError {
        let (line, column) = location(node)
        return PolicyFileError(
            code, file: file, line: line, column: column, message: message, expected: expected, hint: hint)
    }

    public func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let s) where s.string.isEmpty && s.style == .plain: "nothing"
        case .scalar(let s): "\"\(s.string)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    /// Keys the project renamed, old name to new: a file still using an old one gets an
    /// unknown-key error whose hint names the new key.
    public static let renamedKeys = [
        "loss-hold-down": "hold-down", "keep-alive-minimum-interval": "wake-up-minimum-interval",
        "keep-alive": "flow-ping",
    ]

    /// The entries of a mapping; rejects other node types, non-scalar keys, unknown and repeated keys.
    public func mapping(_ node: Node, keys allowed: [String], what: String) throws(PolicyFileError) -> [Entry] {
        guard case .mapping(let map) = node else {
            throw fail(
                .wrongType, at: node, "\(what) must be a mapping, found \(describe(node))",
                expected: "a mapping with keys \(allowed.joined(separator: ", "))")
        }
        var entries: [Entry] = []
        for (keyNode, value) in map {
            guard case .scalar(let key) = keyNode else {
                throw fail(.wrongType, at: keyNode, "a key in \(what) is not a name", expected: "a plain key")
            }
            guard allowed.contains(key.string) else {
                throw fail(
                    .unknownKey, at: keyNode, "unknown key \"\(key.string)\" in \(what)",
                    expected: "one of \(allowed.joined(separator: ", "))",
                    hint: Self.renamedKeys[key.string].flatMap { allowed.contains($0) ? "renamed to \"\($0)\"" : nil }
                        ?? NameHint.suggestion(for: key.string, among: allowed))
            }
            guard !entries.contains(where: { $0.key == key.string }) else {
                throw fail(
                    .duplicateKey, at: keyNode, "key \"\(key.string)\" appears twice in \(what)",
                    expected: "each key once")
            }
            let (line, column) = location(keyNode)
            entries.append(Entry(key: key.string, line: line, column: column, value: value))
        }
        return entries
    }

    public func require(_ key: String, in entries: [Entry], of node: Node, what: String) throws(PolicyFileError) -> Node
    {
        guard let entry = entries.first(where: { $0.key == key }) else {
            throw fail(.missingKey, at: node, "\(what) has no \"\(key)\"", expected: "a \"\(key)\" key")
        }
        return entry.value
    }

    public func scalar(_ node: Node, expected: String) throws(PolicyFileError) -> String {
        guard case .scalar(let s) = node, !(s.string.isEmpty && s.style == .plain) else {
            throw fail(.wrongType, at: node, "found \(describe(node))", expected: expected)
        }
        return s.string
    }

    /// A scalar or a list of scalars, each mapped through `convert`.
    public func list<T>(
        _ node: Node, expected: String, _ convert: (Node) throws(PolicyFileError) -> T
    ) throws(PolicyFileError) -> [T] {
        switch node {
        case .sequence(let seq):
            var out: [T] = []
            for item in seq { out.append(try convert(item)) }
            guard !out.isEmpty else { throw fail(.wrongType, at: node, "the list is empty", expected: expected) }
            return out
        default:
            return [try convert(node)]
        }
    }

    /// A name from a fixed vocabulary, with a nearest-name hint on a miss.
    public func name<T>(
        _ node: Node, kind: String, among names: [String], expected: String? = nil, _ make: (String) -> T?
    ) throws(PolicyFileError) -> T {
        let text = try scalar(node, expected: "a \(kind) name")
        guard let value = make(text) else {
            throw fail(
                .unknownName, at: node, "unknown \(kind) \"\(text)\"",
                expected: expected ?? "one of \(names.joined(separator: ", "))",
                hint: NameHint.suggestion(for: text, among: names))
        }
        return value
    }

    static let selectorGrammar =
        "*, registration, subscription[.PACKAGE], call[.DIRECTION][.STATE], presence-publish or http; PACKAGE: "
        + EventPackage.allCases.map(\.rawValue).joined(separator: ", ") + "; DIRECTION: outgoing, incoming; STATE: "
        + CallState.allCases.map(\.rawValue).joined(separator: ", ")

    func level(_ node: Node) throws(PolicyFileError) -> ServiceLevel {
        try name(node, kind: "service level", among: ServiceLevel.allCases.map(\.rawValue)) {
            ServiceLevel(rawValue: $0)
        }
    }

    func state(_ node: Node) throws(PolicyFileError) -> AppState {
        try name(node, kind: "app state", among: AppState.allCases.map(\.rawValue)) { AppState(rawValue: $0) }
    }

    func selector(_ node: Node) throws(PolicyFileError) -> ServiceSelector {
        try name(node, kind: "service", among: ServiceSelector.allNames, expected: Self.selectorGrammar) {
            ServiceSelector(name: $0)
        }
    }

    func trigger(_ node: Node) throws(PolicyFileError) -> TriggerPattern {
        try name(node, kind: "trigger", among: TriggerPattern.allNames) { TriggerPattern($0) }
    }

    func condition(_ node: Node) throws(PolicyFileError) -> RuleCondition {
        try name(node, kind: "condition", among: RuleCondition.allCases.map(\.rawValue)) { RuleCondition(rawValue: $0) }
    }

    /// A built-in action, or a plugin action namespaced with a dot (`vendor.thing`).
    func action(_ node: Node) throws(PolicyFileError) -> ActionKind {
        try name(node, kind: "action", among: ActionKind.builtIn.map(\.rawValue)) { text in
            let kind = ActionKind(rawValue: text)
            return ActionKind.builtIn.contains(kind) || (kind.isPluginAction && !text.hasPrefix(".")) ? kind : nil
        }
    }

    public func number(_ node: Node, in range: ClosedRange<Double>, what: String) throws(PolicyFileError) -> Double {
        let text = try scalar(node, expected: "a number for \(what)")
        guard let value = Double(text), value.isFinite else {
            throw fail(.wrongType, at: node, "\(what) must be a number, found \"\(text)\"", expected: "a number")
        }
        guard range.contains(value) else {
            throw fail(
                .invalidValue, at: node, "\(what) \(text) is out of range",
                expected: "a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `500ms`, `2s`, `1.5s`, `2m`, `1h`, or `0`.
    public func duration(_ node: Node, what: String) throws(PolicyFileError) -> Duration {
        let text = try scalar(node, expected: "a duration for \(what), like 2s, 500ms or 2m")
        guard let value = Self.parseDuration(text) else {
            throw fail(
                .wrongType, at: node, "\(what) must be a duration, found \"\(text)\"",
                expected: "a number with a unit ms, s, m or h, like 2s, 500ms or 2m")
        }
        return value
    }

    /// A duration within `range`; outside it, an error naming the range (a floor under a
    /// repetition, a ceiling on a wait).
    public func duration(
        _ node: Node, what: String, in range: ClosedRange<Duration>
    ) throws(PolicyFileError) -> Duration {
        let value = try duration(node, what: what)
        guard range.contains(value) else {
            let (low, high) = (DurationText.format(range.lowerBound), DurationText.format(range.upperBound))
            throw fail(
                .invalidValue, at: node, "\(what) \(DurationText.format(value)) is out of range",
                expected: "a duration from \(low) to \(high)")
        }
        return value
    }

    /// Files must name the unit (`5` is a typo, not five seconds); only `0` may stand alone.
    public static func parseDuration(_ text: String) -> Duration? {
        guard text == "0" || text.last?.isLetter == true else { return nil }
        return DurationText.parse(text)
    }
}
