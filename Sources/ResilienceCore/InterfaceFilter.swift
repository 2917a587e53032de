/// Which interfaces count for the path: by exact name or shell glob (`*`, `?`, `[...]`).
///
/// An empty filter allows every interface. Loopback never counts, whatever the filter.
public struct InterfaceFilter: Hashable, Sendable, Codable {
    public var patterns: [String]

    public init(_ patterns: [String] = []) { self.patterns = patterns }

    public static let all = InterfaceFilter()

    public func allows(_ link: LinkState) -> Bool {
        guard !link.isLoopback else { return false }
        return patterns.isEmpty || patterns.contains { Glob.matches(pattern: $0, name: link.name) }
    }
}

/// Minimal fnmatch(3) without flags, written in Swift so Core stays free of C.
enum Glob {
    static func matches(pattern: String, name: String) -> Bool {
        matches(Array(pattern.unicodeScalars), 0, Array(name.unicodeScalars), 0)
    }

    private static func matches(_ p: [Unicode.Scalar], _ pi: Int, _ s: [Unicode.Scalar], _ si: Int) -> Bool {
        var pi = pi
        var si = si
        while pi < p.count {
            switch p[pi] {
            case "*":
                // Collapse runs of '*', then try every split.
                while pi < p.count, p[pi] == "*" { pi += 1 }
                if pi == p.count { return true }
                for start in si...s.count where matches(p, pi, s, start) { return true }
                return false
            case "?":
                guard si < s.count else { return false }
                pi += 1
                si += 1
            case "[":
                guard si < s.count, let (matched, next) = bracket(p, pi, s[si]) else {
                    // An unterminated '[' matches itself literally.
                    guard si < s.count, s[si] == "[" else { return false }
                    pi += 1
                    si += 1
                    continue
                }
                guard matched else { return false }
                pi = next
                si += 1
            default:
                guard si < s.count, s[si] == p[pi] else { return false }
                pi += 1
                si += 1
            }
        }
        return si == s.count
    }

    /// Evaluates a bracket expression at `p[start]`; nil when it is not terminated.
    private static func bracket(_ p: [Unicode.Scalar], _ start: Int, _ c: Unicode.Scalar) -> (Bool, Int)? {
        var i = start + 1
        var negate = false
        if i < p.count, p[i] == "!" || p[i] == "^" {
            negate = true
            i += 1
        }
        var matched = false
        var first = true
        while i < p.count, p[i] != "]" || first {
            first = false
            if i + 2 < p.count, p[i + 1] == "-", p[i + 2] != "]" {
                if p[i] <= c && c <= p[i + 2] { matched = true }
                i += 3
            } else {
                if p[i] == c { matched = true }
                i += 1
            }
        }
        guard i < p.count else { return nil }
        return (matched != negate, i + 1)
    }
}
