/// RFC 3264 offer/answer for one session, as a value: the local descriptions it writes and the
/// remote one in force. No I/O. Which offer is outstanding (the one offer/answer slot of §4,
/// glare included) is the call's: its state machine holds the offer in flight and hands it back
/// here with its answer.
///
/// Invariants:
/// - `o=` keeps its username and session id for the session's life; its version goes up by one
///   with every new offer (§8: "When issuing an offer that modifies the session, the "o=" line
///   of the new SDP MUST be identical to that in the previous SDP, except that the version in
///   the origin field MUST increment by one"; a recovery's re-offer of the same media too, so a
///   far end that skips unchanged versions still re-latches) and with an answer that differs
///   from the last description we sent; it never goes back, even after a refused offer.
/// - Hold is per RFC 3264 §8.4: we stop receiving, so `sendrecv` becomes `sendonly`, and
///   `recvonly` (the far end already holds us) becomes `inactive`; `c=` always carries the real
///   address, never `0.0.0.0`.
/// - An answer's direction per stream is the offer's reversed, limited by our own hold (§6.1):
///   sendonly → recvonly, recvonly → sendonly, inactive → inactive; a held offer is not answered
///   with hold unless we hold too.
/// - A failed or rejected offer changes nothing but the version: the last negotiated session
///   stays in force (RFC 6141).
/// - An IPv4 ↔ IPv6 move changes `c=` (family and address); by default the `o=` address stays
///   as first sent (§8: o= identical but for the version); ``originFollowsAddress`` makes it
///   follow the current address for peers that reject an `o=`/`c=` family mismatch (pjsip#4377).
public struct SDPOfferAnswer: Hashable, Sendable {
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
    public mutating func offer(address: String, media: [SessionDescription.Media], hold: Bool) -> SessionDescription {
        var media = media
        for index in media.indices { media[index].direction = offerDirection(hold: hold, stream: index) }
        return stamp(address: address, media: media, newVersion: true)
    }

    /// The far end answered our `offer`; returns the negotiated media to hand the media session.
    /// - Throws: ``OfferAnswerError/streamCountMismatch(offered:answered:)`` when the answer's
    ///   streams do not match the offer's (§6: one `m=` per offered `m=`); the session in force
    ///   stays.
    public mutating func received(
        answer: SessionDescription, to offer: SessionDescription
    ) throws(OfferAnswerError) -> NegotiatedMedia? {
        guard answer.media.count == offer.media.count else {
            throw .streamCountMismatch(offered: offer.media.count, answered: answer.media.count)
        }
        remote = answer
        return NegotiatedMedia(local: offer, remote: answer)
    }

    /// Checks an offer of the far end (in an INVITE, re-INVITE or UPDATE) before it is answered.
    /// - Parameters:
    ///   - offer: the far end's description.
    ///   - localAddress: the address our side of the call uses now (a loopback media address is
    ///     accepted only when it is loopback too, see ``MediaTarget``); nil when unknown, which
    ///     refuses loopback like any far end's.
    /// - Throws: ``OfferAnswerError/outdatedOffer`` when its `o=` version went back,
    ///   ``OfferAnswerError/unusableMediaTarget(_:)`` when it asks for media where none may go
    ///   (answer it 488).
    public func check(offer: SessionDescription, localAddress: String? = nil) throws(OfferAnswerError) {
        if let why = offer.mediaTargetProblem(localAddress: localAddress) { throw .unusableMediaTarget(why) }
        if let remote, remote.origin.sessionID == offer.origin.sessionID, offer.origin.version < remote.origin.version {
            throw .outdatedOffer
        }
    }

    /// Writes our answer to the far end's `offer` (``check(offer:localAddress:)`` passed); returns
    /// it with the negotiated media. A stream we cannot take is answered with port 0 (the media
    /// session returns fewer sections). The offer is the far end's description in force after.
    public mutating func answer(
        _ offer: SessionDescription, address: String, media: [SessionDescription.Media], hold: Bool
    ) -> (SessionDescription, NegotiatedMedia?) {
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
        remote = offer
        return (description, NegotiatedMedia(local: description, remote: offer))
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
    /// The answer does not have one `m=` per offered `m=` (answer it 488 / treat as failed).
    case streamCountMismatch(offered: Int, answered: Int)
    /// A remote offer whose `o=` version is lower than the one in force.
    case outdatedOffer
    /// A remote offer asking for media at an address or port ``MediaTarget`` refuses (488).
    case unusableMediaTarget(String)
}
