/// Whether an account's binding is still at the registrar, checked rather than assumed.
///
/// A registrar that restarts without a persistent location table (or a backup that shares
/// none) forgets every binding, yet answers flow pings as before: over UDP nothing on the wire
/// tells the client until its next refresh, minutes later. So, each time the account's flow ping
/// is due, this value decides between a plain keep-alive (CRLF or OPTIONS) and a binding query,
/// a REGISTER without Contact (RFC 3261 §10.2.3: "A UA can also query the current bindings by
/// sending a REGISTER request without a Contact header field"), whose 2xx lists the bindings the
/// registrar holds; ours missing from it is a lost binding, and the account registers again.
///
/// Pure: the I/O (the query and the re-registration) is the agent's, time is passed in.
/// Invariants:
/// - Nothing is queried while the account is not known to be bound (no 2xx to a REGISTER
///   since the start, the last unregister or the last loss): a keep-alive only.
/// - A binding unconfirmed for three quarters of the account's flow-ping interval (or longer) is
///   queried at the next ping due; a 2xx to a REGISTER, or to a query that lists the binding,
///   confirms it. Pings come at 80–100 % of their interval (RFC 5626 §4.4.1 jitter), so with the
///   account's own interval every ping may be a query; pings at a shorter interval (a
///   registrar's `Flow-Timer`) query only every few pings. Without an interval (`flow-ping: off`)
///   nothing is queried. The accounts bound at one registrar then take turns
///   (``BindingQueryTurns``): a registrar forgets them all at once, so one query per 3/4 interval
///   there, and an alarm to the others when it finds a binding lost, notice it within one
///   flow-ping interval without a query per account and ping.
/// - A 2xx that does not list the current Contact is ``Verdict/lost`` and forgets the
///   confirmation, so nothing more is queried until a REGISTER binds the account again.
struct BindingCheck: Sendable, Hashable {
    /// What the next due flow ping does.
    enum Probe: Sendable, Hashable {
        /// A CRLF (stream) or OPTIONS (datagram) ping: proves the flow only.
        case keepAlive
        /// A REGISTER without Contact: proves the flow and the binding.
        case queryBindings
    }

    /// What the registrar's answer to a query says about the binding.
    enum Verdict: Sendable, Hashable {
        case bound
        case lost
    }

    /// When a 2xx last showed the binding at the registrar; nil when it is not known to be bound.
    private(set) var confirmedAt: ContinuousClock.Instant?

    /// The ping due at `now` for an account whose flow-ping setting is `interval`: a query when
    /// the binding has gone unconfirmed for three quarters of it.
    func probe(at now: ContinuousClock.Instant, flowPingInterval interval: Duration?) -> Probe {
        guard let interval, let confirmedAt else { return .keepAlive }
        return now - confirmedAt >= interval * 3 / 4 ? .queryBindings : .keepAlive
    }

    /// A 2xx to a REGISTER that bound the current Contact arrived at `now`.
    mutating func confirmed(at now: ContinuousClock.Instant) { confirmedAt = now }

    /// The account is not bound any more (unregistered, flow lost): no queries until it is.
    mutating func forget() { confirmedAt = nil }

    /// Reads the bindings a 2xx to a query listed, as binding keys (see
    /// `SIPUserAgent.bindingKey`), against the current Contact's key.
    mutating func handle(listed: Set<String>, current: String, at now: ContinuousClock.Instant) -> Verdict {
        guard listed.contains(current) else {
            confirmedAt = nil
            return .lost
        }
        confirmedAt = now
        return .bound
    }
}
