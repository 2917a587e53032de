/// RFC 3261 §25.1 grammars for values that end up inside SIP headers (a URI's user and host, a
/// digest user name, a password), checked before they are ever sent.
///
/// Each check returns nil for a valid value, or a short reason for an invalid one; the reason
/// never quotes the value (it may be a password). Invariant: a value that passes contains no
/// CR, LF, NUL or other control byte, so it cannot start a new header line.
public enum SIPGrammar {
    /// `user = 1*( unreserved / escaped / user-unreserved )`.
    public static func userProblem(_ value: String) -> String? {
        escapedProblem(value, allowed: markAndUserUnreserved, what: "a SIP URI user part")
    }

    /// `host = hostname / IPv4address / IPv6reference` (an IPv6 address is also accepted without
    /// its brackets, as config files write it).
    public static func hostProblem(_ value: String) -> String? {
        guard !value.isEmpty else { return "is empty" }
        guard value.utf8.count <= 253 else { return "is longer than 253 characters" }
        if let byte = value.utf8.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "has \(describe(byte)), which a host may not contain"
        }
        if value.hasPrefix("[") || value.contains(":") {
            let inner = value.hasPrefix("[") && value.hasSuffix("]") ? value.dropFirst().dropLast() : Substring(value)
            let colons = inner.filter { $0 == ":" }.count
            guard colons >= 2, colons <= 7, inner.utf8.allSatisfy({ $0.isHexDigit || $0 == 58 || $0 == 46 }) else {
                return "is not an IPv6 address (in brackets or without)"
            }
            return nil
        }
        let labels =
            value.hasSuffix(".")
            ? value.dropLast().split(separator: ".", omittingEmptySubsequences: false)
            : value.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            let bytes = Array(label.utf8)
            guard let first = bytes.first, let last = bytes.last, bytes.count <= 63 else {
                return "has an empty or over-long label"
            }
            guard first.isAlphanumeric, last.isAlphanumeric, bytes.allSatisfy({ $0.isAlphanumeric || $0 == 45 })
            else {
                return "is not a host name (letters, digits and inner hyphens between dots) nor an IP address"
            }
        }
        return nil
    }

    /// A digest `username`, the content of a `quoted-string`: not empty, printable text without
    /// `"` or `\` and without control bytes (UTF-8 letters are fine).
    public static func authUserProblem(_ value: String) -> String? {
        guard !value.isEmpty else { return "is empty" }
        if let byte = value.utf8.first(where: { $0 < 0x20 || $0 == 0x7F || $0 == 34 || $0 == 92 }) {
            return "has \(describe(byte)), which a quoted string may not contain"
        }
        return nil
    }

    /// A password: any text without control bytes (CR, LF, NUL would corrupt the file or the hash
    /// input as other implementations compute it).
    public static func passwordProblem(_ value: String) -> String? {
        guard !value.isEmpty else { return "is empty" }
        if value.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return "contains a control character" }
        return nil
    }

    /// A URI written into a header between `<` and `>` (a subscription's resource): a scheme
    /// and printable ASCII without space, `<`, `>` or `"` (RFC 3986 §2 leaves those out of URIs).
    public static func uriProblem(_ value: String) -> String? {
        guard !value.isEmpty else { return "is empty" }
        guard value.utf8.count <= 1024 else { return "is longer than 1024 characters" }
        if let byte = value.utf8.first(where: { !(0x21...0x7E).contains($0) || $0 == 60 || $0 == 62 || $0 == 34 }) {
            return "has \(describe(byte)), which a URI may not contain"
        }
        guard let colon = value.firstIndex(of: ":"), colon != value.startIndex,
            value[..<colon].utf8.allSatisfy({ $0.isAlphanumeric || $0 == 43 || $0 == 45 || $0 == 46 })
        else { return "has no scheme (like sip:)" }
        return nil
    }

    /// An RFC 5626 `+sip.instance` value: a URN (RFC 8141, `urn:` then printable ASCII without
    /// space, `<`, `>` or `"`), written inside `"<` and `>"`.
    public static func instanceIDProblem(_ value: String) -> String? {
        guard value.lowercased().hasPrefix("urn:") else { return "is not a URN (urn:uuid:...)" }
        return uriProblem(value)
    }

    /// A URI parameter's value (`pvalue = 1*paramchar`, RFC 3261 §25.1), such as RFC 8599's
    /// `pn-param`: unreserved characters, `[]/:&+$` and `%` escapes.
    public static func parameterValueProblem(_ value: String) -> String? {
        escapedProblem(value, allowed: parameterCharacters, what: "a URI parameter value")
    }

    /// Why `value` is not 1*( alphanumeric / `allowed` / `%` HEXDIG HEXDIG ), naming `what`.
    private static func escapedProblem(_ value: String, allowed: Set<UInt8>, what: String) -> String? {
        guard !value.isEmpty else { return "is empty" }
        let bytes = Array(value.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else {
                    return "has a % not followed by two hex digits"
                }
                index += 3
                continue
            }
            guard byte.isAlphanumeric || allowed.contains(byte) else {
                return "has \(describe(byte)), which \(what) may not contain unescaped"
            }
            index += 1
        }
        return nil
    }

    /// `mark` and `param-unreserved` (RFC 3261 §25.1).
    private static let parameterCharacters = Set("-_.!~*'()[]/:&+$".utf8)

    /// `mark` (RFC 3261 §25.1) plus `user-unreserved`.
    private static let markAndUserUnreserved = Set("-_.!~*'()&=+$,;?/".utf8)

    private static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 13: "a CR"
        case 10: "a LF"
        case 0: "a NUL"
        case 0x20: "a space"
        case 0x21...0x7E: "\"\(Character(UnicodeScalar(byte)))\""
        default: "a byte 0x\(String(byte, radix: 16, uppercase: true))"
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self)
    }
    fileprivate var isAlphanumeric: Bool {
        (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self)
    }
}
