/// RFC 3264 offer/answer for one session, as a value: the local description it writes, the
/// remote one it accepted, and whether an offer is outstanding. No I/O; the call layer sends
/// what it returns and feeds in what arrives.
///
/// Invariants:
/// - At most one offer is outstanding, in either direction (§4): ``offer(address:media:hold:)``
///   while one is pending, or a remote offer while ours is pending (glare: answer 491), throws.
/// - `o=` keeps its username and session id for the session's life; its version goes up by one
///   with every new offer (§8: "When issuing an offer that modifies the session, the "o=" line
///   of the new SDP MUST be identical to that in the previous SDP, except that the version in
///   the origin field MUST increment by one"; a recovery's re-offer of the same media too, so a
///   far end that skips unchanged versions still re-latches) and with an answer that differs
///   from the last description we sent; it never goes back, even after ``rollback()``.
/// - Hold is per RFC 3264 §8.4: we stop receiving, so `sendrecv` becomes `sendonly`, and
///   `recvonly` (the far end already holds us) becomes `inactive`; `c=` always carries the real
///   address, never `0.0.0.0`.
/// - An answer's direction per stream is the offer's reversed, limited by our own hold (§6.1):
///   sendonly → recvonly, recvonly → sendonly, inactive → inactive; a held offer is not answered
///   with hold unless we hold too.
/// - A failed or rejected offer (``rollback()``) leaves the last negotiated session in force (RFC 6141).
/// - An IPv4 ↔ IPv6 move changes `c=` (family and address); by default the `o=` address stays
///   as first sent (§8: o= identical but for the version); ``originFollowsAddress`` makes it
///   follow the current address for peers that reject an `o=`/`c=` family mismatch (pjsip#4377).
public struct SDPOfferAnswer: Hashable, Sendable {
    public enum State: Hashable, Sendable {
        case stable
        /// We sent this offer and await the answer.
        case localOfferSent(SessionDescription)
        /// The far end's offer, awaiting our answer.
        case remoteOfferReceived(SessionDescription)
    }

    public private(set) var state = State.stable
    /// The last description we sent (offer or answer), nil before the first.
    public private(set) var lastSent: SessionDescription?
    /// The far end's description in force (the last offer answered or answer accepted).
    public private(set) var remote: SessionDescription?
    /// The highest `o=` version sent so far.
    public private(set) var version: UInt64
    public let sessionID: UInt64
    public let username: String
    public var originFollowsAddress: Bool

    /// - Parameters:
    ///   - sessionID: a number unique to this session (NTP time or random), at most
    ///     ``SessionDescription/maximumOriginNumber``; larger values are clamped.
    ///   - username: the `o=` username (`-` when none is wanted).
    ///   - originFollowsAddress: whether the `o=` address follows the current address.
    public init(sessionID: UInt64, username: String = "-", originFollowsAddress: Bool = false) {
        self.sessionID = min(sessionID, SessionDescription.maximumOriginNumber)
        self.username = username
        self.originFollowsAddress = originFollowsAddress
        self.version = min(sessionID, SessionDescription.maximumOriginNumber / 2)
    }

    /// Whether the far end holds us: its description in force receives nothing from us.
    public var remoteHoldsUs: Bool {
        guard let remote, !remote.media.isEmpty else { return false }
        return !remote.direction(ofMedia: 0).receives
    }

    /// The direction of stream `index` in an offer we would make now.
    public func offerDirection(hold: Bool, stream index: Int = 0) -> SessionDescription.Direction {
        let farReceives = remote.map { $0.direction(ofMedia: index).receives } ?? true
        return SessionDescription.Direction(sends: farReceives, receives: !hold)
    }

    /// The direction of stream `index` in our answer to `offer`.
    public static func answerDirection(
        to offer: SessionDescription, hold: Bool, stream index: Int = 0
    ) -> SessionDescription.Direction {
        let offered = offer.direction(ofMedia: index)
        return SessionDescription.Direction(sends: offered.receives, receives: offered.sends && !hold)
    }

    /// Writes an offer for `media` (the media session's sections) at `address`.
    /// - Throws: ``OfferAnswerError/offerPending`` unless stable.
    public mutating func offer(
        address: String, media: [SessionDescription.Media], hold: Bool
    ) throws(OfferAnswerError) -> SessionDescription {
        guard state == .stable else { throw .offerPending }
        var media = media
        for index in media.indices { media[index].direction = offerDirection(hold: hold, stream: index) }
        let description = stamp(address: address, media: media, newVersion: true)
        state = .localOfferSent(description)
        return description
    }

    /// The far end answered our offer; returns the negotiated media to hand the media session.
    /// - Throws: ``OfferAnswerError`` when no offer is pending or the answer's streams do not
    ///   match the offer's (§6: one `m=` per offered `m=`).
    public mutating func received(answer: SessionDescription) throws(OfferAnswerError) -> NegotiatedMedia? {
        guard case .localOfferSent(let offer) = state else { throw .noOfferPending }
        guard answer.media.count == offer.media.count else {
            throw .streamCountMismatch(offered: offer.media.count, answered: answer.media.count)
        }
        state = .stable
        remote = answer
        return NegotiatedMedia(local: offer, remote: answer)
    }

    /// The far end sent an offer (in an INVITE, re-INVITE or UPDATE).
    /// - Parameters:
    ///   - offer: the far end's description.
    ///   - localAddress: the address our side of the call uses now (a loopback media address is
    ///     accepted only when it is loopback too, see ``MediaTarget``); nil when unknown, which
    ///     refuses loopback like any far end's.
    /// - Throws: ``OfferAnswerError/offerPending`` on glare (answer it 491),
    ///   ``OfferAnswerError/outdatedOffer`` when its `o=` version went back,
    ///   ``OfferAnswerError/unusableMediaTarget(_:)`` when it asks for media where none may go
    ///   (answer it 488). A refused offer changes nothing: the session in force stays.
    public mutating func received(
        offer: SessionDescription, localAddress: String? = nil
    ) throws(OfferAnswerError) {
        guard state == .stable else { throw .offerPending }
        if let why = offer.mediaTargetProblem(localAddress: localAddress) { throw .unusableMediaTarget(why) }
        if let remote, remote.origin.sessionID == offer.origin.sessionID, offer.origin.version < remote.origin.version {
            throw .outdatedOffer
        }
        state = .remoteOfferReceived(offer)
    }

    /// Writes our answer to the pending remote offer; returns it with the negotiated media.
    /// A stream we cannot take is answered with port 0 (the media session returns fewer sections).
    public mutating func answer(
        address: String, media: [SessionDescription.Media], hold: Bool
    ) throws(OfferAnswerError) -> (SessionDescription, NegotiatedMedia?) {
        guard case .remoteOfferReceived(let offer) = state else { throw .noOfferPending }
        var answered: [SessionDescription.Media] = []
        for index in offer.media.indices {
            if index < media.count, offer.media[index].port != 0 {
                var section = media[index]
                section.direction = Self.answerDirection(to: offer, hold: hold, stream: index)
                answered.append(section)
            } else {
                let offered = offer.media[index]
                answered.append(
                    SessionDescription.Media(
                        kind: offered.kind, port: 0, transport: offered.transport, formats: offered.formats))
            }
        }
        let description = stamp(address: address, media: answered)
        state = .stable
        remote = offer
        return (description, NegotiatedMedia(local: description, remote: offer))
    }

    /// Our offer failed or was rejected, or we withdraw it: the last negotiated session stays.
    public mutating func rollback() {
        if case .localOfferSent = state { state = .stable }
    }

    /// Builds the description we send, bumping the version for a new offer (`newVersion`) or
    /// when the content changed.
    private mutating func stamp(
        address: String, media: [SessionDescription.Media], newVersion: Bool = false
    ) -> SessionDescription {
        let connection = SessionDescription.Connection(address: address)
        let origin = (originFollowsAddress ? nil : lastSent?.origin.connection) ?? connection
        var description = SessionDescription(
            origin: .init(username: username, sessionID: sessionID, version: version, connection: origin),
            connection: connection, media: media)
        if let lastSent {
            var previous = lastSent
            previous.origin.version = version
            if newVersion || previous != description {
                version += 1
                description.origin.version = version
            }
        }
        lastSent = description
        return description
    }
}

/// What the media session is told once an offer/answer exchange completes (first stream).
public struct NegotiatedMedia: Hashable, Sendable {
    /// Where to send RTP: the far end's connection address and port.
    public var remoteAddress: String
    public var remotePort: Int
    /// Our direction: what we offered or answered, limited by what the far end said.
    public var direction: SessionDescription.Direction
    /// The first payload type both listed, if any.
    public var payloadType: String?

    public init(
        remoteAddress: String, remotePort: Int, direction: SessionDescription.Direction, payloadType: String? = nil
    ) {
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.direction = direction
        self.payloadType = payloadType
    }

    /// The first stream both sides kept (port not 0); nil when none is.
    init?(local: SessionDescription, remote: SessionDescription) {
        guard let index = remote.media.indices.first(where: { remote.media[$0].port != 0 && $0 < local.media.count }),
            local.media[index].port != 0, let connection = remote.connection(ofMedia: index)
        else { return nil }
        remoteAddress = connection.address
        remotePort = remote.media[index].port
        let ours = local.direction(ofMedia: index)
        let theirs = remote.direction(ofMedia: index)
        direction = SessionDescription.Direction(
            sends: ours.sends && theirs.receives, receives: ours.receives && theirs.sends)
        payloadType = local.media[index].formats.first { remote.media[index].formats.contains($0) }
    }
}

/// Why an offer/answer step was refused.
public enum OfferAnswerError: Error, Hashable, Sendable {
    /// An offer is outstanding (ours or theirs): for a remote offer this is glare (answer 491).
    case offerPending
    /// An answer (or our answer) with no offer to match.
    case noOfferPending
    /// The answer does not have one `m=` per offered `m=` (answer it 488 / treat as failed).
    case streamCountMismatch(offered: Int, answered: Int)
    /// A remote offer whose `o=` version is lower than the one in force.
    case outdatedOffer
    /// A remote offer asking for media at an address or port ``MediaTarget`` refuses (488).
    case unusableMediaTarget(String)
}
