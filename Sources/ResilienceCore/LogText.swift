/// Text from the wire or a file, made safe for one log line.
///
/// Invariant: the result contains no C0 control (NUL … US), no DEL, no C1 control
/// (U+0080 … U+009F) and no Unicode line or paragraph separator, so a value can neither end a
/// log line early, forge a second one nor drive a terminal (ESC sequences); each such character
/// becomes a visible escape (`\r`, `\n`, `\t`, `\0`, `\x1B`, `\u{2028}`), and a backslash
/// becomes `\\`, so an escape in the output always means an escaped byte. The result is at most
/// `limit` characters of the input, followed by `…(+N)` naming what was cut.
public enum LogText {
    /// The longest input prefix kept by default: enough for a header value, not a flood.
    public static let defaultLimit = 200

    /// `text` with control characters escaped and cut at `limit` characters.
    public static func escaped(_ text: some StringProtocol, limit: Int = defaultLimit) -> String {
        var out = ""
        var kept = 0
        var cut = 0
        for scalar in text.unicodeScalars {
            guard kept < max(0, limit) else {
                cut += 1
                continue
            }
            kept += 1
            append(scalar, to: &out)
        }
        if cut > 0 { out += "…(+\(cut))" }
        return out
    }

    /// Bytes that may not be UTF-8 (a malformed datagram): invalid sequences become U+FFFD.
    public static func escaped(bytes: some Collection<UInt8>, limit: Int = defaultLimit) -> String {
        escaped(String(decoding: bytes.prefix(max(0, limit) * 4), as: UTF8.self), limit: limit)
    }

    private static func append(_ scalar: Unicode.Scalar, to out: inout String) {
        switch scalar.value {
        case 0x5C: out += "\\\\"
        case 0x0D: out += "\\r"
        case 0x0A: out += "\\n"
        case 0x09: out += "\\t"
        case 0x00: out += "\\0"
        case 0x01...0x1F, 0x7F...0x9F:
            let hex = String(scalar.value, radix: 16, uppercase: true)
            out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
        case 0x2028, 0x2029: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
}
