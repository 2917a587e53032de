/// The `Replaces` header of an incoming INVITE (RFC 3891 §6.1): the dialog it names, seen from
/// the receiver: `to-tag` is the receiver's local tag, `from-tag` its remote tag.
///
/// Hostile input: the Call-ID and tags are at most ``maximumLength`` characters each, and a
/// value without a Call-ID or either tag is no value (nil).
struct ReplacesValue: Hashable, Sendable {
    static let maximumLength = 256

    let callID: String
    let toTag: String
    let fromTag: String
    /// `early-only`: replace the dialog only while it is early.
    let earlyOnly: Bool

    init?(_ value: String) {
        let callID = String(value.prefix { $0 != ";" }).trimmingSIPWhitespace()
        let parameters = SIPParameters.parse(afterFirstSemicolon: value)
        guard !callID.isEmpty, callID.count <= Self.maximumLength,
            let toTag = parameters["to-tag"], let fromTag = parameters["from-tag"],
            !toTag.isEmpty, !fromTag.isEmpty, toTag.count <= Self.maximumLength, fromTag.count <= Self.maximumLength
        else { return nil }
        self.callID = callID
        self.toTag = toTag
        self.fromTag = fromTag
        self.earlyOnly = parameters["early-only"] != nil
    }
}

/// One of our calls as the `Replaces` rules see it.
struct ReplaceableCall: Hashable, Sendable {
    let id: CallID
    let callID: String
    let localTag: String
    /// The far end's tag: of the confirmed dialog, or of the early dialog of our ringing INVITE
    /// (from its provisional); nil when none is known yet.
    let remoteTag: String?
    /// Our INVITE created the dialog (we are its UAC).
    let weInitiated: Bool
    /// A 2xx confirmed the dialog.
    let isConfirmed: Bool
}

/// What to do with an INVITE that carries `Replaces` (RFC 3891 §3), decided from the header
/// values and our calls; a pure rule.
///
/// - More than one `Replaces`, or one that does not parse: 400.
/// - It names no dialog of ours: 481 Call/Transaction Does Not Exist.
/// - It names a confirmed dialog with `early-only`: 486 Busy Here.
/// - It names an early dialog this UA did not initiate (a call ringing here): 481, the ringing
///   call left alone.
/// - It names our confirmed dialog, or the early dialog of our own ringing INVITE: the new call
///   takes its place; the old one ends with BYE (confirmed) or CANCEL (early) once the new
///   dialog is up.
enum IncomingReplaces: Hashable, Sendable {
    case reject(status: Int, reason: String)
    /// Replace call `id`; `confirmed` says how it ends (BYE, else CANCEL).
    case replace(CallID, confirmed: Bool)

    /// The verdict for the `Replaces` values `values` of an INVITE; nil when it has none.
    static func verdict(_ values: [String], calls: [ReplaceableCall]) -> Self? {
        guard let first = values.first else { return nil }
        guard values.count == 1, let replaces = ReplacesValue(first) else {
            return .reject(status: 400, reason: "Bad Request")
        }
        let match = calls.first {
            $0.callID == replaces.callID && $0.localTag == replaces.toTag && $0.remoteTag == replaces.fromTag
        }
        guard let match else { return .reject(status: 481, reason: "Call/Transaction Does Not Exist") }
        if match.isConfirmed {
            return replaces.earlyOnly ? .reject(status: 486, reason: "Busy Here") : .replace(match.id, confirmed: true)
        }
        guard match.weInitiated else { return .reject(status: 481, reason: "Call/Transaction Does Not Exist") }
        return .replace(match.id, confirmed: false)
    }
}
