/// One dialog as seen by this user agent (RFC 3261 §12): the state that in-dialog requests are
/// built from and that in-dialog requests received are checked against.
///
/// Invariants:
/// - `callID` and `localTag` never change; `remoteTag` is set once, by the first 2xx or the
///   first NOTIFY (RFC 6665 §4.1.2.4), and never changes after (a different remote tag is another
///   dialog: a fork).
/// - `localCSeq` only grows and stays below 2³¹ (RFC 3261 §8.1.1.5); ``nextLocalCSeq()`` hands
///   out each number once.
/// - `remoteCSeq` only grows: a request whose CSeq is lower is out of order and is refused
///   (§12.2.2), so a stale NOTIFY can never overwrite a newer state.
public struct Dialog: Hashable, Sendable {
    /// What identifies a dialog at this end: Call-ID, local tag and remote tag (§12).
    public struct ID: Hashable, Sendable, CustomStringConvertible {
        public var callID: String
        public var localTag: String
        /// Nil while the dialog is not confirmed (a SUBSCRIBE sent, no 2xx or NOTIFY yet).
        public var remoteTag: String?

        public init(callID: String, localTag: String, remoteTag: String? = nil) {
            self.callID = callID
            self.localTag = localTag
            self.remoteTag = remoteTag
        }

        public var description: String { "\(callID);local=\(localTag);remote=\(remoteTag ?? "-")" }
    }

    /// The largest CSeq a request may carry (RFC 3261 §8.1.1.5: less than 2³¹).
    public static let maximumCSeq: UInt32 = (1 << 31) - 1

    public let callID: String
    public let localTag: String
    public private(set) var remoteTag: String?
    /// The CSeq of the last request this end sent in the dialog (0 before the first).
    public private(set) var localCSeq: UInt32
    /// The CSeq of the last request the peer sent in the dialog; nil before the first.
    public private(set) var remoteCSeq: UInt32?
    /// Where in-dialog requests go (the peer's Contact); nil until the peer sent one.
    public var remoteTarget: String?
    /// The Record-Route set, in the order in-dialog requests list it as `Route`.
    public var routeSet: [String]
    /// True when the dialog was created over a `sips:` URI (§12.1.2).
    public let isSecure: Bool

    /// A new dialog this end opens (an outgoing SUBSCRIBE or INVITE), not yet confirmed.
    /// - Parameters:
    ///   - callID: the Call-ID of the request that opens it.
    ///   - localTag: this end's tag (the From tag of that request).
    ///   - isSecure: true when it was opened over a `sips:` URI.
    ///   - localCSeq: the CSeq already used (0 for a new Call-ID), clamped to ``maximumCSeq``.
    public init(callID: String, localTag: String, isSecure: Bool = false, localCSeq: UInt32 = 0) {
        self.callID = callID
        self.localTag = localTag
        self.remoteTag = nil
        self.localCSeq = min(localCSeq, Self.maximumCSeq)
        self.remoteCSeq = nil
        self.remoteTarget = nil
        self.routeSet = []
        self.isSecure = isSecure
    }

    public var id: ID { ID(callID: callID, localTag: localTag, remoteTag: remoteTag) }

    /// Whether the peer has answered (2xx or NOTIFY) and its tag is known.
    public var isConfirmed: Bool { remoteTag != nil }

    /// The CSeq for the next request sent in the dialog; saturates at ``maximumCSeq`` (a dialog
    /// that sent 2³¹ requests is long past any sane life).
    public mutating func nextLocalCSeq() -> UInt32 {
        localCSeq = min(localCSeq, Self.maximumCSeq - 1) + 1
        return localCSeq
    }

    /// Confirms the dialog with the peer's tag; a confirmed dialog keeps its tag.
    /// - Returns: false when the dialog is already confirmed with another tag (a fork).
    @discardableResult
    public mutating func confirm(remoteTag tag: String) -> Bool {
        guard let remoteTag else {
            remoteTag = tag
            return true
        }
        return remoteTag == tag
    }

    /// Takes in the target and route set of a 2xx that confirmed the dialog (§12.1.2): the
    /// Contact is the remote target, the Record-Route set reversed is the route set. A response
    /// without Record-Route leaves the route set as it was (a refresh does not change it).
    public mutating func update(fromResponse response: SIPMessage) {
        if let contact = response.headers.listValues("Contact").first { remoteTarget = extractURI(contact) }
        let recordRoute = response.headers.listValues("Record-Route")
        if !recordRoute.isEmpty { routeSet = recordRoute.reversed() }
    }

    /// Checks a request the peer sent in the dialog (§12.2.2) and takes in its CSeq and Contact.
    /// - Returns: false when its CSeq is lower than the last one seen (out of order: answer 500).
    public mutating func accept(request: SIPMessage, cseq: UInt32) -> Bool {
        if let remoteCSeq, cseq < remoteCSeq { return false }
        remoteCSeq = cseq
        if let contact = request.headers.listValues("Contact").first { remoteTarget = extractURI(contact) }
        return true
    }
}
