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
    /// The Record-Route set, in the order in-dialog requests list it as `Route`; fixed when the
    /// dialog is established (RFC 3261 §12.1), never recomputed by a target refresh.
    public var routeSet: [String]
    /// True once the route set was taken from the request or response that established the
    /// dialog: later responses leave it alone.
    public private(set) var routeSetFixed = false
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

    /// Takes in the target and route set of a 2xx (or dialog-creating 1xx) to our request
    /// (§12.1.2): the Contact is the remote target, the Record-Route set reversed is the route
    /// set. The route set is taken once, from the response that establishes the dialog; a 2xx
    /// to a later target refresh only replaces the remote target (§12.2.1.2).
    public mutating func update(fromResponse response: SIPMessage) {
        if let contact = response.headers.listValues("Contact").first { remoteTarget = extractURI(contact) }
        guard !routeSetFixed else { return }
        let recordRoute = response.headers.listValues("Record-Route")
        if !recordRoute.isEmpty { routeSet = recordRoute.reversed() }
        routeSetFixed = isConfirmed
    }

    /// The dialog a UAS creates from a request that creates one (an INVITE, §12.1.1): the remote
    /// tag is the From tag, the remote target the Contact, the route set the Record-Route values
    /// in the request's order, the remote CSeq the request's; `localTag` is the To tag its
    /// dialog-creating responses carry.
    public init(answering request: SIPMessage, localTag: String) {
        self.init(
            callID: request.headers["Call-ID"] ?? "", localTag: localTag,
            isSecure: request.requestURI?.lowercased().hasPrefix("sips:") == true)
        if let fromTag = request.tag(in: "From") { remoteTag = fromTag }
        remoteCSeq = request.cseq?.number
        if let contact = request.headers.listValues("Contact").first { remoteTarget = extractURI(contact) }
        routeSet = request.headers.listValues("Record-Route")
        routeSetFixed = true
    }

    /// The methods whose requests, and whose 2xx, refresh the remote target (§12.2: re-INVITE
    /// and UPDATE for calls, RFC 3311 §5; SUBSCRIBE and NOTIFY for subscriptions, RFC 6665 §4).
    public static let targetRefreshMethods: Set<String> = ["INVITE", "UPDATE", "SUBSCRIBE", "NOTIFY", "REFER"]

    /// Where a request in this dialog goes (§12.2.1.1): the Request-URI and the `Route` values.
    /// Without a route set the Request-URI is the remote target and there is no `Route`; with a
    /// loose router (`;lr`) first it is the remote target and `Route` is the route set; with a
    /// strict router first that router is the Request-URI and the remote target goes last.
    public func routing(fallbackTarget: String) -> (requestURI: String, routes: [String]) {
        Self.routing(remoteTarget: remoteTarget ?? fallbackTarget, routeSet: routeSet)
    }

    /// ``routing(fallbackTarget:)`` for a route set and target outside a dialog value (an ACK to
    /// a 2xx that crossed a CANCEL).
    public static func routing(remoteTarget: String, routeSet: [String]) -> (requestURI: String, routes: [String]) {
        guard let first = routeSet.first else { return (remoteTarget, []) }
        let uri = extractURI(first)
        if SIPParameters.parse(afterFirstSemicolon: uri)["lr"] != nil { return (remoteTarget, routeSet) }
        // A strict router: parameters a Request-URI may not carry (none here beyond the URI's
        // own) stay with it; the remote target is the last Route.
        return (uri, Array(routeSet.dropFirst()) + ["<\(remoteTarget)>"])
    }

    /// Whether a request of the peer with this CSeq is in order (§12.2.2: not lower than the
    /// last one seen; a lower one "MUST be rejected with a 500 (Server Internal Error)").
    public func isInOrder(_ cseq: UInt32) -> Bool { remoteCSeq.map { cseq >= $0 } ?? true }

    /// Checks a request the peer sent in the dialog (§12.2.2) and takes in its CSeq, and the
    /// Contact of a target refresh (``targetRefreshMethods``; a BYE's Contact changes nothing).
    /// - Returns: false when its CSeq is lower than the last one seen (out of order: answer 500).
    public mutating func accept(request: SIPMessage, cseq: UInt32) -> Bool {
        guard isInOrder(cseq) else { return false }
        remoteCSeq = cseq
        guard Self.targetRefreshMethods.contains(request.method?.uppercased() ?? "") else { return true }
        if let contact = request.headers.listValues("Contact").first { remoteTarget = extractURI(contact) }
        return true
    }
}
