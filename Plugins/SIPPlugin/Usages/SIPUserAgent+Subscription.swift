internal import Logging
public import ResilienceCore

extension SIPUserAgent {
    public func subscriptionStatus(_ service: ServiceID) -> SubscriptionStatus {
        subscriptions[service]?.status ?? SubscriptionStatus()
    }

    /// Creates or refreshes a subscription (RFC 6665). A refresh answered with 481 recreates the
    /// dialog once; a notifier that terminated it with `rejected`/`noresource`/`invariant` makes
    /// this throw a permanent error until the plugin is reconfigured.
    public func subscribe(_ target: SubscriptionTarget, service: ServiceID, path: NetworkPath) async throws {
        let flow = try await flow(for: path)
        var state =
            subscriptions[service]
            ?? SubscriptionState(target: target, resource: target.resource ?? account.addressOfRecord)
        if case .terminated(let reason, let resubscribe) = state.status.state {
            guard resubscribe else {
                throw PluginError.permanent("subscription to \(target.package.sipEvent) ended: \(reason)")
            }
            state = SubscriptionState(target: target, resource: state.resource)
        }
        subscriptions[service] = state
        for _ in 0..<3 {
            let response = try await sendSubscribe(service: service, expires: state.expires, over: flow)
            guard var current = subscriptions[service] else { throw CancellationError() }
            let status = response.status ?? 0
            switch status {
            case 200..<300:
                if current.toTag == nil {
                    current.toTag = response.headers["To"].flatMap {
                        SIPParameters.parse(afterFirstSemicolon: $0)["tag"]
                    }
                }
                if let contact = response.headers.listValues("Contact").first {
                    current.remoteTarget = extractURI(contact)
                }
                if !response.headers.values("Record-Route").isEmpty {
                    current.routeSet = response.headers.listValues("Record-Route").reversed()
                }
                current.status.expires = response.expires ?? current.expires
                if current.status.state == .none { current.status.state = .pending }
                subscriptions[service] = current
                logger.info(
                    "sip.subscribed", metadata: ["event": "\(target.package.sipEvent)", "service": "\(service)"])
                return
            case 481 where current.inDialog:
                logger.notice("sip.subscription-recreated", metadata: ["service": "\(service)"])
                state = SubscriptionState(target: target, resource: current.resource)
                subscriptions[service] = state
            case 423:
                guard let minimum = response.minExpires, minimum > current.expires
                else { throw PluginError.permanent("423 without a usable Min-Expires") }
                current.expires = minimum
                state = current
                subscriptions[service] = current
            default:
                throw Self.failure(response, "SUBSCRIBE \(target.package.sipEvent)")
            }
        }
        throw PluginError("SUBSCRIBE \(target.package.sipEvent): no 2xx after recreating")
    }

    /// Ends a subscription with `Expires: 0` (no-op when none is established).
    public func unsubscribe(service: ServiceID, path: NetworkPath) async throws {
        guard let state = subscriptions[service], state.inDialog else {
            subscriptions[service] = nil
            return
        }
        let flow = try await flow(for: path)
        let response = try await sendSubscribe(service: service, expires: 0, over: flow)
        // Keep the dialog identifiers so the notifier's final NOTIFY is answered 200, not 481.
        subscriptions[service]?.status.state = .terminated(reason: "unsubscribed", resubscribe: true)
        guard let status = response.status, (200..<300).contains(status) || status == 481 else {
            throw Self.failure(response, "SUBSCRIBE (unsubscribe)")
        }
    }

    private func sendSubscribe(service: ServiceID, expires: Int, over flow: SIPTransport) async throws -> SIPMessage {
        guard let state = subscriptions[service] else { throw CancellationError() }
        let uri = state.remoteTarget ?? state.resource
        var request = SIPMessage.request("SUBSCRIBE", uri: uri)
        for route in state.routeSet { request.headers.add("Route", route) }
        request.headers.add("From", "<\(account.addressOfRecord)>;tag=\(state.fromTag)")
        request.headers.add("To", "<\(state.resource)>" + (state.toTag.map { ";tag=\($0)" } ?? ""))
        request.headers.add("Call-ID", state.callID)
        request.headers.add("CSeq", "0 SUBSCRIBE")
        request.headers.add("Contact", "<\(contactURI(on: flow))>")
        request.headers.add("Event", state.target.package.sipEvent)
        request.headers.add("Accept", state.target.package.acceptedBody)
        request.headers.add("Expires", "\(expires)")
        return try await exchange(request, uri: uri, over: flow) {
            subscriptions[service]?.cseq += 1
            return subscriptions[service]?.cseq ?? 1
        }
    }

    /// Handles an incoming request the transport could not answer on its own (NOTIFY).
    func received(request: SIPMessage, reply: @Sendable (SIPMessage) -> Void) {
        guard request.method?.uppercased() == "NOTIFY" else { return }
        let callID = request.headers["Call-ID"]
        let ourTag = request.headers["To"].flatMap { SIPParameters.parse(afterFirstSemicolon: $0)["tag"] }
        guard let match = subscriptions.first(where: { $0.value.callID == callID && $0.value.fromTag == ourTag }) else {
            reply(request.makeResponse(status: 481, reason: "Subscription Does Not Exist"))
            return
        }
        let service = match.key
        var state = match.value
        reply(request.makeResponse(status: 200, reason: "OK"))
        if state.toTag == nil {
            state.toTag = request.headers["From"].flatMap { SIPParameters.parse(afterFirstSemicolon: $0)["tag"] }
        }
        if let contact = request.headers.listValues("Contact").first { state.remoteTarget = extractURI(contact) }
        let (subscriptionState, expires, retryAfter) = SubscriptionStatus.State.parse(
            request.headers["Subscription-State"] ?? "active")
        state.status.state = subscriptionState
        state.status.expires = expires ?? state.status.expires
        state.status.retryAfter = retryAfter
        state.status.notifyCount += 1
        state.status.lastBody = request.body
        if case .terminated(let reason, _) = subscriptionState {
            logger.notice(
                "sip.subscription-terminated",
                metadata: ["service": "\(service)", "reason": "\(LogText.escaped(reason, limit: 64))"])
            state.toTag = nil
            state.remoteTarget = nil
            state.routeSet = []
        }
        subscriptions[service] = state
        eventContinuation.yield(.notify(service: service, status: state.status))
    }
}
