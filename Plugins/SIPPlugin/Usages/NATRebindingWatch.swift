/// When an answered keep-alive's view of a flow's public address calls for a REGISTER (RFC 3581
/// §4, RFC 5626 §4.4.1), as a value with the I/O outside: the registrar's view from each 2xx to a
/// REGISTER goes in through ``registered(_:)``, each keep-alive's through ``handle(seen:)``, and
/// a REGISTER that failed through ``registerFailed()``.
///
/// Invariants:
/// - two addresses are one mapping when their hosts are the same IP address and their ports are
///   equal (`[2001:db8::1]:5060` and a STUN answer's `[2001:db8:0:0:0:0:0:1]:5060` are one
///   mapping, as are `[::ffff:198.18.0.1]:5060` and `198.18.0.1:5060`); a host that is no IP
///   literal is compared by its lower-cased text;
/// - each distinct mapping seen costs at most one REGISTER: the mapping a REGISTER was sent for
///   is remembered until another one is seen. Keep-alives answered while that REGISTER is on its
///   way (several pings that shared one STUN answer) send nothing; a registrar whose 2xx names
///   another address than the keep-alive saw (no `rport` support, a NAT that maps the
///   keep-alive and the REGISTER apart) is registered with once per rebinding, not at every
///   keep-alive, and the disagreement is reported once
///   (``Decision/disagreement(registered:seen:)``);
/// - a failed REGISTER is forgotten, so a later keep-alive may try again; the runtime's backoff
///   for the failed ping spaces those tries.
struct NATRebindingWatch: Hashable, Sendable {
    /// What one answered keep-alive calls for.
    enum Decision: Hashable, Sendable {
        /// The mapping is the registered one, or its change is being (or was) dealt with.
        case nothing
        /// A rebinding: register again through the flow (once for `seen`).
        case registerAgain(registered: String, seen: String)
        /// The REGISTER sent for `seen` came back naming `registered`: the registrar and the
        /// keep-alive see the flow differently. Given once; nothing is sent for it.
        case disagreement(registered: String, seen: String)
    }

    /// The flow's public `host:port` per the last 2xx to a REGISTER (its top Via); nil before one.
    private(set) var registeredAddress: String?
    /// The mapping the last rebinding REGISTER was sent for, until another one is seen.
    private var registeredFor: String?
    /// The REGISTER for ``registeredFor`` has not been answered yet.
    private var inFlight = false
    /// Whether the disagreement about ``registeredFor`` was reported.
    private var disagreementReported = false

    /// A 2xx to a REGISTER named `address` as the flow's public address (nil: no usable Via).
    mutating func registered(_ address: String?) {
        registeredAddress = address
        inFlight = false
    }

    /// The REGISTER sent for the last rebinding failed: the mapping may be tried again.
    mutating func registerFailed() {
        registeredFor = nil
        inFlight = false
        disagreementReported = false
    }

    /// An answered keep-alive (or binding query) saw the flow as `seen`.
    mutating func handle(seen: String?) -> Decision {
        guard let registered = registeredAddress, let seen, !Self.sameMapping(registered, seen) else {
            return .nothing
        }
        if let earlier = registeredFor, Self.sameMapping(earlier, seen) {
            guard !inFlight, !disagreementReported else { return .nothing }
            disagreementReported = true
            return .disagreement(registered: registered, seen: seen)
        }
        registeredFor = seen
        inFlight = true
        disagreementReported = false
        return .registerAgain(registered: registered, seen: seen)
    }

    /// Whether two `host:port` texts name one mapping (see the type's invariants).
    static func sameMapping(_ one: String, _ other: String) -> Bool {
        guard let first = split(one), let second = split(other), first.port == second.port else { return one == other }
        if let a = MediaTarget.bytes(of: first.host), let b = MediaTarget.bytes(of: second.host) { return a == b }
        return first.host.lowercased() == second.host.lowercased()
    }

    /// `host:port` (IPv6 in brackets) as its parts; nil without a port after the last colon.
    private static func split(_ address: String) -> (host: String, port: Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            return nil
        }
        var host = address[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return (String(host), port)
    }
}
