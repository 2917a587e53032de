internal import Logging
public import ResilienceCore

extension SIPUserAgent {
    /// Proves the flow to the registrar alive, within `timers.pongTimeout`:
    /// - TCP: an RFC 5626 §4.4.1 CRLF ping, answered by a CRLF pong;
    /// - UDP: a STUN Binding on the SIP port when the registrar keeps flows (RFC 5626 §4.4.1),
    ///   else an out-of-dialog OPTIONS to the registrar without credentials; any response (401,
    ///   404 and 405 included) proves the flow, which also refreshes NAT bindings on the way.
    ///   The answer names the flow's public address: when it differs from the one registered
    ///   (a NAT rebinding), the account registers again at once (SIPUserAgent+NAT).
    ///
    /// A dead flow is closed and reported through `onFlowLost`, so the runtime re-registers
    /// through a new one.
    /// - Throws: a non-retryable `PluginError` when the flow is dead (no answer in time, port
    ///   unreachable, connection closed): retrying the ping cannot help, the `flow.lost`
    ///   re-registration is the recovery.
    ///
    /// Once the binding has gone unconfirmed for three quarters of the account's interval, the
    /// ping is a binding query instead, when it is this account's turn at its registrar
    /// (`BindingCheck`, `BindingQueryTurns`, `checkBinding(over:)`); its answer names the public
    /// address too, so a rebinding is noticed on a query as on a keep-alive.
    ///
    /// A ping proves only the flow the registration was bound through: when the flow is another
    /// (opened since the last 2xx to a REGISTER, e.g. after the registrar dropped the old one)
    /// while the registrar may hold a binding, this registers through it instead, so a lost flow
    /// always ends with the account bound on the new one.
    public func sendFlowPing(path: NetworkPath) async throws {
        // On a backup registrar, the preferred one is asked beside this ping when its probe is due.
        probePreferredIfDue(path: path)
        // RFC 5626 §4.2: the second flow (if any) is pinged on its own, beside this one.
        if account.outboundFlows == 2 { Task { await self.pingSecondFlow(path: path) } }
        let flow = try await flow(for: path)
        let mayBeBound = registration.granted != nil || registration.outcomeUnknown
        if mayBeBound, registration.registeredFlow !== flow {
            logger.notice("sip.flow-ping-registers", metadata: ["reason": "flow not registered"])
            try await register(path: path)
            return
        }
        if bindingQueryDue(over: flow) {
            try await checkBinding(over: flow)
            _ = try await registerAgainIfMappingChanged(flow: flow, path: path)
            return
        }
        let answered: Bool
        switch flow.kind {
        case .tcp, .tls: answered = try await pingStream(flow)
        case .udp:
            if let socket = flow.sharedSocket {
                // One OPTIONS proves the socket for every account on it.
                answered = await socket.proveAlive(fresh: sharedPingFreshness) { [self] in
                    await keepAliveDatagram(flow, on: socket)
                }
                if !answered, !flow.isActive { throw Self.flowGone(during: "OPTIONS flow ping") }
            } else {
                answered = try await pingDatagram(flow)
            }
        }
        guard answered else {
            let timeout = timers.pongTimeout
            logger.warning("sip.flow-ping-timeout", metadata: ["timeout": "\(timeout)"])
            // Not `close()`: abandoning reports the loss through the flow's close callback, once.
            await flow.abandon()
            throw PluginError.permanent("flow ping: no answer within \(timeout); flow closed and reported lost")
        }
        _ = try await registerAgainIfMappingChanged(flow: flow, path: path)
    }

    /// CRLF ping; true when the CRLF pong came back in time.
    private func pingStream(_ flow: SIPTransport) async throws -> Bool {
        pongGeneration += 1
        let id = pongGeneration
        let timeout = timers.pongTimeout
        // The pong may be handled while this actor waits for the send: count pongs so one that
        // arrives before the waiter is installed still counts.
        let pongsBefore = pongCount
        do {
            try await flow.send(bytes: Array("\r\n\r\n".utf8))
        } catch {
            throw Self.flowGone(during: "CRLF flow ping")
        }
        if pongCount > pongsBefore { return true }
        let answered = await withCheckedContinuation { continuation in
            if let earlier = pongWaiter { endPongWait(id: earlier.id, answered: false) }
            let clock = self.clock
            let timer = Task { [weak self] in
                guard (try? await clock.sleep(for: timeout)) != nil else { return }
                await self?.endPongWait(id: id, answered: false)
            }
            pongWaiter = (id, continuation, timer)
        }
        // A flow that closed while waiting was reported by its close callback already.
        if !answered, !flow.isActive { throw Self.flowGone(during: "CRLF flow ping") }
        return answered
    }

    /// OPTIONS ping; true when any final response came back in time (also the failover's probe
    /// of a preferred registrar, over a flow of its own).
    func pingDatagram(_ flow: SIPTransport) async throws -> Bool {
        let uri = "sip:\(formatHost(account.registrarHost)):\(account.registrarPort)"
        var request = SIPMessage.request("OPTIONS", uri: uri)
        request.headers.add("Via", flow.newVia())
        request.headers.add("Max-Forwards", "70")
        request.headers.add("From", "<\(account.addressOfRecord)>;tag=\(randomToken())")
        request.headers.add("To", "<\(uri)>")
        request.headers.add("Call-ID", randomToken())
        request.headers.add("CSeq", "1 OPTIONS")
        request.headers.add("User-Agent", "NetResilience")
        let (options, table, timers, clock) = (request, self.table, self.timers, self.clock)
        let attempt = Task {
            try await runNonInviteTransaction(options, over: flow, table: table, timers: timers, clock: clock)
        }
        let limit = Task {
            try await clock.sleep(for: timers.pongTimeout)
            attempt.cancel()
        }
        defer { limit.cancel() }
        do {
            let response = try await withTaskCancellationHandler {
                try await attempt.value
            } onCancel: {
                attempt.cancel()
            }
            logger.debug("sip.flow-ping-answered", metadata: ["status": "\(response.status ?? 0)"])
            flow.sharedSocket?.observeMapping(response.viaPublicAddress)
            return true
        } catch  where Task.isCancelled {
            throw CancellationError()
        } catch {
            // A cut-off transaction ends as a timeout or, its stream finished, as "flow closed";
            // only a flow that is really gone (ECONNREFUSED, a close) is one, and its close
            // callback reported the loss already.
            if !flow.isActive { throw Self.flowGone(during: "OPTIONS flow ping") }
            return false
        }
    }

    private static func flowGone(during what: String) -> PluginError {
        PluginError.permanent("\(what): flow closed; reported lost")
    }

    func pongReceived() {
        pongCount &+= 1
        guard let waiter = pongWaiter else { return }
        endPongWait(id: waiter.id, answered: true)
    }

    func endPongWait(id: UInt64, answered: Bool) {
        guard let waiter = pongWaiter, waiter.id == id else { return }
        pongWaiter = nil
        waiter.timeout.cancel()
        waiter.continuation.resume(returning: answered)
    }
}
