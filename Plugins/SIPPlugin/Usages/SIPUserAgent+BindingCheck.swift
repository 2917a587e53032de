internal import Logging
internal import NIOCore
internal import ResilienceCore

extension SIPUserAgent {
    /// A flow ping that also asks the registrar for the account's bindings (see `BindingCheck`):
    /// a REGISTER without Contact over the registered flow, paced with the registrar's other
    /// REGISTERs, its digest answered from the cached challenge.
    ///
    /// - Any answer proves the flow, as a keep-alive's would.
    /// - A 2xx that lists the current Contact confirms the binding.
    /// - A 2xx without it means the registrar forgot the account (a restart without a persistent
    ///   location table, a backup sharing none): the registration and the established
    ///   subscriptions and publication (the notifier likely forgot those too) are reported
    ///   through `onFlowLost`, so the runtime registers again at once (the loss throttle spaces
    ///   repeated ones), then recreates each subscription; the flow itself stays, and
    ///   ``registrationStatus`` shows the account unbound meanwhile.
    /// - No answer within `timers.pongTimeout` is a dead flow, as for an unanswered ping.
    /// - Throws: a non-retryable `PluginError` when the flow is dead or the credentials are
    ///   refused.
    func checkBinding(over flow: SIPTransport) async throws {
        guard let contact = registration.contact else { return }
        let response: SIPMessage
        do {
            response = try await withinPongTimeout {
                try await self.sendRegister(contacts: [], expires: nil, over: flow)
            }
        } catch  where Task.isCancelled {
            throw CancellationError()
        } catch let error as PluginError where !error.isRetryable {
            throw error
        } catch {
            let timeout = timers.pongTimeout
            logger.warning("sip.binding-query-timeout", metadata: ["timeout": "\(timeout)"])
            // Not `close()`: abandoning reports the loss through the flow's close callback, once.
            if flow.isActive { await flow.abandon() }
            throw PluginError.permanent("binding query: no answer within \(timeout); flow closed and reported lost")
        }
        // Its Via names the flow's public address like a keep-alive's answer (SIPUserAgent+NAT).
        flow.sharedSocket?.observeMapping(response.viaPublicAddress)
        guard let status = response.status, (200..<300).contains(status) else {
            // The flow carried an answer; what the registrar thinks of queries is no verdict.
            logger.debug("sip.binding-query-answered", metadata: ["status": "\(response.status ?? 0)"])
            return
        }
        let listed = Set(response.headers.listValues("Contact").prefix(256).map { Self.bindingKey(extractURI($0)) })
        switch registration.bindingCheck.handle(listed: listed, current: Self.bindingKey(contact), at: clock.now) {
        case .bound:
            logger.debug("sip.binding-confirmed")
        case .lost:
            bindingLost(contact: contact, over: flow)
        }
    }

    /// Whether the flow ping due now is a binding query: the binding has gone unconfirmed for 3/4
    /// of the account's interval (`BindingCheck`) and, when the plugin's accounts share a watch,
    /// it is this account's turn at its registrar (`BindingQueryTurns`).
    func bindingQueryDue(over flow: SIPTransport) -> Bool {
        guard account.checksBindings, let interval = account.flowPingInterval else { return false }
        let now = clock.now
        guard registration.bindingCheck.probe(at: now, flowPingInterval: interval) == .queryBindings else {
            return false
        }
        return flows?.bindingWatch.takeTurn(
            at: Self.registrarKey(flow), by: ObjectIdentifier(self), now: now, interval: interval) ?? true
    }

    /// The registrar a flow leads to, as `BindingWatch` knows it: its address and port (UDP and
    /// stream flows to one server share its memory).
    static func registrarKey(_ flow: SIPTransport) -> String {
        "\(flow.remote.ipAddress ?? "?"):\(flow.remote.port ?? 0)"
    }

    /// A 2xx bound the account through `flow`: when it checks bindings, a lost binding another
    /// account finds at the same registrar makes it renew (`serverStateMayBeGone`).
    func watchBinding(at flow: SIPTransport) {
        guard account.checksBindings, let watch = flows?.bindingWatch else { return }
        watch.listen(ObjectIdentifier(self), at: Self.registrarKey(flow)) { [weak self] in
            Task { await self?.serverStateMayBeGone(reason: "registrar forgot another account's binding") }
        }
    }

    /// The registrar no longer holds the current binding: shows the account unbound and reports
    /// what rode on the binding, so the runtime re-registers and resubscribes; every other
    /// account bound at the same registrar renews too (it forgot them as well, most likely).
    private func bindingLost(contact: String, over flow: SIPTransport) {
        let services = servicesOnFlow
        let alarmed =
            flows?.bindingWatch.bindingLost(
                by: ObjectIdentifier(self), at: Self.registrarKey(flow), now: clock.now,
                interval: account.flowPingInterval ?? .seconds(30)) ?? 0
        logger.warning(
            "sip.binding-lost",
            metadata: [
                "contact": "\(LogText.escaped(contact, limit: 128))",
                "services": "\(services.map(\.rawValue).joined(separator: ","))",
                "others-renewing": "\(alarmed)",
            ])
        registration.granted = nil
        subscriptionsLostTheirFlow()
        onFlowLost(services)
    }

    /// What this account holds at its servers may be gone without a sign on the wire (the
    /// process was stopped longer than a notifier waits for an answer): the registration and the
    /// established subscriptions and publication are reported through `onFlowLost`, so the
    /// runtime registers again and refreshes each subscription; a notifier that dropped one
    /// answers the refresh 481, and the subscription is recreated. Nothing while not bound (the
    /// runtime is registering already).
    public func serverStateMayBeGone(reason: String) {
        guard registration.granted != nil else { return }
        let services = servicesOnFlow
        logger.notice(
            "sip.renewing",
            metadata: ["reason": "\(reason)", "services": "\(services.map(\.rawValue).joined(separator: ","))"])
        onFlowLost(services)
    }

    /// Runs `body` on this actor, cancelled after `timers.pongTimeout`.
    func withinPongTimeout<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let attempt = Task { try await body() }
        let clock = self.clock
        let timeout = timers.pongTimeout
        let limit = Task {
            try await clock.sleep(for: timeout)
            attempt.cancel()
        }
        defer { limit.cancel() }
        return try await withTaskCancellationHandler {
            try await attempt.value
        } onCancel: {
            attempt.cancel()
        }
    }
}
