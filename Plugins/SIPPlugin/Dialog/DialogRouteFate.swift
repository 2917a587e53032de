/// What becomes of a call's dialog when the server the account was bound on stops answering
/// and the account moves to another one (RFC 3261 §12.2.1.1: in-dialog requests follow the
/// route set; RFC 3263 §4: a name is resolved to its servers in order).
///
/// The decision is a pure function of the route set, the dead server and, for a first Route
/// that names a host, that name's RFC 3263 answer (the lookup is outside):
/// - no route set: in-dialog requests go to the far end's own Contact, not through the server:
///   ``unaffected``;
/// - a first Route that is an IP literal other than the dead server's: ``unaffected``;
/// - a first Route that is the dead server's own address: no in-dialog request can reach the far
///   end any more, the call ends with a reason that says so (``ended(reason:)``);
/// - a first Route that names a host (``needsResolution(of:)`` is its hop): ``kept(via:)`` the
///   first target of the name's answer that is not the dead server, ``ended(reason:)`` when the
///   answer is empty or holds only the dead server.
///
/// Invariants: a route set from the wire is hostile: an unparsable first Route changes nothing
/// (``unaffected``); the reason text is bounded (``maximumReasonLength``).
enum DialogRouteFate: Hashable, Sendable {
    /// The dialog does not pass the dead server.
    case unaffected
    /// The dialog's first Route names a host that still resolves to a living server.
    case kept(via: SIPTarget)
    /// No in-dialog request can reach the far end: the call ends with this reason.
    case ended(reason: String)

    /// The longest reason text.
    static let maximumReasonLength = 120

    /// The first Route's host, port and transport; nil without a route set or when it does not
    /// parse (the remote target is then where requests go, as before).
    static func firstHop(of routeSet: [String]) -> RemoteTarget? {
        routeSet.first.flatMap { RemoteTarget(uri: extractURI($0)) }
    }

    /// The hop whose name must be resolved (RFC 3263) before ``decide(routeSet:dead:resolved:)``
    /// can tell; nil when the first Route is absent, unparsable or an IP literal.
    static func needsResolution(of routeSet: [String]) -> RemoteTarget? {
        guard let hop = firstHop(of: routeSet), !SIPServerLocator.isIPLiteral(hop.host) else { return nil }
        return hop
    }

    /// Whether the first Route names a port (RFC 3263 §4.2: a name with a port gets A/AAAA
    /// lookups only; without one, NAPTR and SRV).
    static func firstHopHasPort(_ routeSet: [String]) -> Bool {
        guard let first = routeSet.first else { return false }
        let uri = extractURI(first)
        let afterScheme = uri.drop { $0 != ":" }.dropFirst()
        let beforeParameters = afterScheme.prefix { $0 != ";" && $0 != "?" }
        let hostPort =
            beforeParameters.lastIndex(of: "@").map { beforeParameters[beforeParameters.index(after: $0)...] }
            ?? beforeParameters
        return hostPort.hasPrefix("[") ? hostPort.contains("]:") : hostPort.contains(":")
    }

    /// The fate of a dialog with `routeSet` after `dead` stopped answering; `resolved` is the RFC
    /// 3263 answer for the first Route's name (ignored for an IP literal; empty when the lookup
    /// failed).
    static func decide(routeSet: [String], dead: SIPTarget, resolved: [SIPTarget]) -> DialogRouteFate {
        guard let hop = firstHop(of: routeSet) else { return .unaffected }
        if SIPServerLocator.isIPLiteral(hop.host) {
            guard hop.host.lowercased() == dead.address.lowercased(), hop.port == dead.port else { return .unaffected }
            return .ended(reason: bounded("record-routing proxy \(dead.address):\(dead.port) is gone"))
        }
        let isDead = { (target: SIPTarget) in
            target.address.lowercased() == dead.address.lowercased() && target.port == dead.port
        }
        if let living = resolved.first(where: { !isDead($0) }) { return .kept(via: living) }
        return .ended(reason: bounded("record-routing proxy \(hop.host) resolves to no living server"))
    }

    private static func bounded(_ text: String) -> String { String(text.prefix(maximumReasonLength)) }
}
