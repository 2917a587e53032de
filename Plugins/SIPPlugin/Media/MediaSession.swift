/// The app's media: the plugin negotiates SDP (``SDPOfferAnswer``) but owns no media engine.
/// A call asks its media session what to offer or answer, and tells it what was agreed.
///
/// Contract the call layer keeps:
/// - ``describe(localAddress:direction:answering:)`` is called before every offer and answer,
///   with the address the call's signalling now uses; a session whose sockets are bound to
///   another address rebinds before it returns (so `m=` carries a port that is open on
///   `localAddress`). The returned sections' `direction` is overwritten by the offer/answer rules.
/// - ``negotiated(_:)`` follows every completed exchange, in order; ``close()`` ends the media
///   and is called once, when the call ends.
/// - Calls for one session never overlap (the call layer awaits each).
/// - On a device with several links, bind the sockets to the interface holding `localAddress`
///   too (Linux `SO_BINDTOIFINDEX`), as ``RTPEchoSession`` does: the kernel keeps routing by a
///   link that lost its carrier, so a socket bound to the address alone may leave by that link.
///
/// A conformance check every implementation should pass: after `describe` for address A returns
/// a section with port P, datagrams sent to A:P reach the session.
public protocol MediaSession: AnyObject, Sendable {
    /// The media sections (`m=`) to offer or answer with at `localAddress`.
    /// - Parameters:
    ///   - localAddress: the address the call's signalling uses now (IPv4 or IPv6 text).
    ///   - direction: what the offer/answer rules will write (the session may pause capture on
    ///     `sendonly`/`inactive`).
    ///   - offer: the far end's offer when answering, nil when offering.
    func describe(
        localAddress: String, direction: SessionDescription.Direction, answering offer: SessionDescription?
    ) async throws -> [SessionDescription.Media]

    /// The exchange completed: where the far end receives, and the direction in force.
    func negotiated(_ media: NegotiatedMedia) async throws

    /// The call ended: release sockets and devices.
    func close() async
}
