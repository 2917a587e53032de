/// Numbers from the wire, clamped where they are read (issue 13): no caller ever sees a value
/// outside the documented range, so arithmetic on them cannot overflow by construction.
///
/// Ranges: a `delta-seconds` value (RFC 3261 §25.1: `1*DIGIT`) is read saturating at
/// 2^31 − 1 and then clamped to ``maximumLifetime`` (one day): an expiry, `Retry-After`,
/// `Min-Expires` or `Flow-Timer` is in `0...86_400` seconds. A value that is empty, negative or
/// not decimal is absent (nil), never zero. CSeq numbers are below 2^31 (§8.1.1.5) or the CSeq is
/// malformed; `Content-Length` is at most ``SIPParser/maximumMessageSize`` or the message is
/// rejected (see ``SIPParser``).
public enum SIPWireNumber {
    /// The longest lifetime or wait taken from a peer, in seconds: one day. A registrar granting
    /// a week is refreshed daily; a `Retry-After` of years waits a day.
    public static let maximumLifetime = 86_400

    /// RFC 3261's bound on numbers such as CSeq and delta-seconds: 2^31 − 1.
    public static let maximumWireValue = Int(Int32.max)

    /// Leading decimal digits of `text` (after blanks), saturating at ``maximumWireValue`` and
    /// then clamped to `maximum`; nil when no digit leads or something other than blanks, `;`
    /// or a `(comment` follows them (`Retry-After: 120 (meeting);duration=60` reads 120).
    public static func deltaSeconds(_ text: some StringProtocol, maximum: Int = maximumLifetime) -> Int? {
        var digits = 0
        var value = 0
        var rest = Substring(text).drop { $0 == " " || $0 == "\t" }
        while let first = rest.first, let digit = first.wholeNumberValue, first.isASCII {
            // Saturate before multiplying: value ≤ 2^31 − 1, so value × 10 + 9 fits in Int.
            value = Swift.min(value * 10 + digit, maximumWireValue)
            digits += 1
            rest = rest.dropFirst()
        }
        guard digits > 0 else { return nil }
        if let next = rest.first, next != " ", next != "\t", next != ";", next != "(" { return nil }
        return Swift.min(value, Swift.max(0, maximum))
    }
}

extension SIPMessage {
    /// `Retry-After` (RFC 3261 §20.33) in `0...86_400` seconds; nil when absent or malformed.
    public var retryAfter: Duration? {
        headers["Retry-After"].flatMap { SIPWireNumber.deltaSeconds($0) }.map { .seconds($0) }
    }

    /// `Expires` (§20.19) in `0...86_400` seconds; nil when absent or malformed.
    public var expires: Int? { headers["Expires"].flatMap { SIPWireNumber.deltaSeconds($0) } }

    /// `Min-Expires` (§20.23) in `0...86_400` seconds; nil when absent or malformed.
    public var minExpires: Int? { headers["Min-Expires"].flatMap { SIPWireNumber.deltaSeconds($0) } }

    /// `Flow-Timer` (RFC 5626 §5.4) in `1...86_400` seconds; nil when absent, zero or malformed.
    public var flowTimer: Int? {
        headers["Flow-Timer"].flatMap { SIPWireNumber.deltaSeconds($0) }.flatMap { $0 > 0 ? $0 : nil }
    }
}

extension SIPParameters {
    /// A `delta-seconds` parameter (`expires`, `retry-after`) in `0...86_400`; nil when absent
    /// or malformed.
    public func seconds(_ name: String) -> Int? { self[name].flatMap { SIPWireNumber.deltaSeconds($0) } }
}
