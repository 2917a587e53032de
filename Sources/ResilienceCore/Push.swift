/// What a push notification asks the client to do (RFC 8599 leaves the payload to the provider;
/// these are the three reasons a SIP push proxy wakes a device).
public enum PushKind: String, Hashable, Sendable, Codable, CaseIterable {
    /// An INVITE waits at the proxy for the device's REGISTER.
    case call
    /// A MESSAGE was stored for the device while it slept.
    case message
    /// The binding is about to expire (RFC 8599 §4.1): register again.
    case refresh
}

/// One push notification for one account, checked at the door.
///
/// Invariants (a push comes from a provider, a control socket or a test: hostile until checked):
/// - `account` is 1…``maximumAccountLength`` UTF-8 bytes with no whitespace or control character.
/// - `payload`, when present, is at most ``maximumPayloadLength`` UTF-8 bytes with no control
///   character other than tab, so it can neither break a log line nor a hook's environment.
/// A value that breaks them is never built: ``init(account:kind:payload:)`` throws instead.
public struct Push: Hashable, Sendable {
    /// The longest account name a push may carry (the control socket's limit for accounts).
    public static let maximumAccountLength = 64
    /// The longest payload kept (APNs allows 4 KiB per notification; what a client needs of it,
    /// a call or message id, is far shorter).
    public static let maximumPayloadLength = 1024

    /// The account the push is for.
    public let account: String
    public let kind: PushKind
    /// The provider's opaque payload (e.g. a call id), if any.
    public let payload: String?

    /// - Throws: ``PushProblem`` naming what is wrong with the account or the payload.
    public init(account: String, kind: PushKind = .call, payload: String? = nil) throws(PushProblem) {
        guard !account.isEmpty, account.utf8.count <= Self.maximumAccountLength,
            account.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && !Self.isControl($0) })
        else {
            throw PushProblem(
                "the account must be 1 to \(Self.maximumAccountLength) bytes without spaces or control characters")
        }
        if let payload {
            guard payload.utf8.count <= Self.maximumPayloadLength else {
                throw PushProblem("the payload is longer than \(Self.maximumPayloadLength) bytes")
            }
            guard payload.unicodeScalars.allSatisfy({ $0 == "\t" || !Self.isControl($0) }) else {
                throw PushProblem("the payload has a control character")
            }
        }
        self.account = account
        self.kind = kind
        self.payload = payload
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

/// Why a push was refused; the text is fit for a log line and a control-socket reply.
public struct PushProblem: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
