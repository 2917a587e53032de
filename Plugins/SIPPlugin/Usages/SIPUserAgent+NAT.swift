internal import Logging
internal import ResilienceCore

/// Behind a NAT (RFC 3581, RFC 5626 §4.4): the client learns its public address and port from
/// the registrar's answers and registers again at once when the NAT's mapping changed.
///
/// Decision: the Contact keeps the flow's own (private) address. The registrar is expected to
/// fix NAT (RFC 5626 outbound, or Kamailio's `fix_nated_register`, Asterisk's
/// `force_rport,comedia`, FreeSWITCH's NDLB): it reaches the client through the address the
/// REGISTER came from, which the client keeps current by registering again whenever that
/// address changes. A registrar that does no NAT fixing cannot reach a client behind NAT with
/// either Contact for long: a public Contact goes stale at the first rebinding just the same.
///
/// Invariants: a mapping is compared only on the flow the registration was bound through, only
/// over UDP (a stream's rebinding kills the connection, which the CRLF ping sees), and only
/// against what the last 2xx to a REGISTER reported; each distinct mapping seen costs at most one
/// REGISTER and one `sip.nat-mapping-changed` line, however many pings see it and whatever the
/// registrar then reports (``NATRebindingWatch``).
extension SIPUserAgent {
    /// Notes what a 2xx to a REGISTER says about the NAT: the public address of the flow (its top
    /// Via's `received`/`rport`) and whether the registrar keeps flows (RFC 5626: a `Flow-Timer`,
    /// or `outbound` in `Require`), which makes STUN the UDP keep-alive.
    func noteNAT(from response: SIPMessage, on flow: SIPTransport) {
        let mapped = response.viaPublicAddress
        registration.natWatch.registered(mapped)
        registration.keepsFlows =
            response.flowTimer != nil
            || response.headers.listValues("Require").contains { $0.trimmingSIPWhitespace().lowercased() == "outbound" }
        flow.sharedSocket?.observeMapping(mapped)
    }

    /// The UDP keep-alive of a shared socket: a STUN Binding (RFC 5626 §4.4.1: "the UA sends a
    /// STUN Binding Request … on the flow") when the registrar keeps flows, else (or when STUN
    /// got no answer) an OPTIONS. True when either was answered within the pong timeout.
    func keepAliveDatagram(_ flow: SIPTransport, on socket: SharedDatagramSocket) async -> Bool {
        if registration.keepsFlows,
            let mapped = await socket.stunBinding(timeout: timers.pongTimeout, clock: clock)
        {
            logger.debug("sip.stun-keep-alive-answered", metadata: ["mapped": "\(mapped)"])
            return true
        }
        return (try? await pingDatagram(flow)) ?? false
    }

    /// How recent another account's answered ping on the same socket must be to stand for this
    /// one: the pong timeout, but at most a quarter of the registrar's `Flow-Timer`, so a
    /// keep-alive meant to outrun a NAT's timeout is never skipped for one a whole interval old.
    var sharedPingFreshness: Duration {
        registration.flowTimer.map { min(timers.pongTimeout, .seconds($0) / 4) } ?? timers.pongTimeout
    }

    /// After an answered keep-alive: when the registrar now sees the flow from another address
    /// or port than it did at the last REGISTER (a NAT rebinding), registers again at once
    /// through it, so calls reach the new mapping, and re-INVITEs the calls in progress
    /// (``reinviteCallsAfterRebinding(at:path:)``). True when it registered.
    ///
    /// Pings that shared one keep-alive all get here at once (a ping the runtime superseded
    /// still waits for the shared answer): a cancelled one does nothing, and the first claims
    /// the new mapping before it awaits anything, so the others send nothing
    /// (``NATRebindingWatch``). When the registrar's answer still names another address than
    /// the keep-alive saw, that is logged once (`sip.nat-mapping-disagrees`) and not registered
    /// again until the mapping moves.
    func registerAgainIfMappingChanged(flow: SIPTransport, path: NetworkPath) async throws -> Bool {
        // A binding a query found lost (granted nil) is being registered again by the runtime
        // already; a ping the runtime superseded (cancelled) leaves it to the newer one.
        guard !Task.isCancelled, flow.kind == .udp, registration.granted != nil, registration.registeredFlow === flow
        else {
            return false
        }
        let (message, registered, seen): (Logger.Message, String, String)
        let decision = registration.natWatch.handle(seen: flow.sharedSocket?.observedMapping)
        switch decision {
        case .nothing: return false
        case .disagreement(let was, let now): (message, registered, seen) = ("sip.nat-mapping-disagrees", was, now)
        case .registerAgain(let was, let now): (message, registered, seen) = ("sip.nat-mapping-changed", was, now)
        }
        logger.notice(
            message,
            metadata: [
                "registered": "\(LogText.escaped(registered, limit: 64))",
                "seen": "\(LogText.escaped(seen, limit: 64))",
            ])
        guard case .registerAgain = decision else { return false }
        let rebound = clock.now
        do {
            try await register(path: path)
        } catch {
            registration.natWatch.registerFailed()
            throw error
        }
        await reinviteCallsAfterRebinding(at: rebound, path: path)
        return true
    }

    /// The rebinding moved every mapping of this host, not only the SIP flow's: the proxy fixed
    /// each call's Contact to the old public port (so the far end's in-dialog requests go
    /// nowhere), and the far end or relay sends media to the old public media port. Each call
    /// with a dialog (at most ``maximumCallsLooked``) is re-INVITEd (RFC 3261 §12.2: a target
    /// refresh, so the proxy fixes the Contact again from the new mapping); the media session
    /// then greets the far end from its socket (``RTPKeepAlive``), which opens the new media
    /// mapping and lets a relay learn it. The rebinding counts as a loss that ended when it was
    /// seen, so an earlier recovery over the same flow does not coalesce this one. A failed
    /// re-INVITE is logged; the call's own rules (481, 408) end a call the far end lost.
    func reinviteCallsAfterRebinding(at instant: ContinuousClock.Instant, path: NetworkPath) async {
        let ids = calls.all.prefix(Self.maximumCallsLooked).filter { $0.value.dialogID.remoteTag != nil }.map(\.key)
        // A call that ended while an earlier one was re-INVITEd has left the table.
        for id in ids where calls[id] != nil {
            do {
                try await reinvite(id, path: path, after: instant..<instant)
            } catch {
                logger.notice(
                    "sip.call-reinvite-after-rebinding-failed",
                    metadata: ["call": "\(id)", "error": "\(LogText.escaped("\(error)", limit: 200))"])
            }
        }
    }
}

extension SIPMessage {
    /// The sender's address as the answering hop saw it (RFC 3581 §4): the top Via's `received`
    /// (else its sent-by host) and `rport` (else its sent-by port, else 5060), as `host:port`
    /// (IPv6 in brackets); nil without a usable top Via.
    var viaPublicAddress: String? {
        guard let top = headers.listValues("Via").first, let sentBy = ReceivedVia.sentBy(of: top) else { return nil }
        let parameters = SIPParameters.parse(afterFirstSemicolon: top)
        var host =
            parameters["received"].map { $0.hasPrefix("[") ? String($0.dropFirst().dropLast()) : $0 } ?? sentBy.host
        guard !host.isEmpty, host.count <= 64 else { return nil }
        let port = parameters["rport"].flatMap { Int($0) }.flatMap { (1...65_535).contains($0) ? $0 : nil }
        if host.contains(":") { host = "[\(host)]" }
        return "\(host.lowercased()):\(port ?? sentBy.port ?? 5060)"
    }
}
