internal import Logging
public import ResilienceCore

extension SIPUserAgent {
    public func subscriptionStatus(_ service: ServiceID) -> SubscriptionStatus {
        subscriptions[service]?.status ?? SubscriptionStatus()
    }

    /// Creates or refreshes a subscription (RFC 6665). On a flow no REGISTER has gone through yet
    /// while the account may be bound, it registers through that flow first (the registrar sees
    /// the REGISTER first), so a SUBSCRIBE never waits for a REGISTER no decision will send; a
    /// failed REGISTER fails the SUBSCRIBE with its error. A refresh answered with 481 recreates the
    /// dialog once; so does the first SUBSCRIBE after the subscription's flow was lost (the
    /// notifier may have lost it too). After a terminating NOTIFY (RFC 6665 §4.1.3) it opens a
    /// new dialog, first waiting once as the NOTIFY asked (at once, after the clamped
    /// `retry-after`, or after the executor's backoff); a notifier that ended it with `rejected`/`noresource`/`invariant` makes this throw a
    /// permanent error until the plugin is reconfigured.
    public func subscribe(_ target: SubscriptionTarget, service: ServiceID, path: NetworkPath) async throws {
        let resource = subscriptions[service]?.resource ?? target.resource ?? account.addressOfRecord
        if var state = subscriptions[service] {
            if case .terminated(let reason, let resubscribe) = state.status.state, state.status.state != .unsubscribed {
                guard resubscribe else {
                    throw PluginError.permanent("subscription to \(target.package.sipEvent) ended: \(reason)")
                }
                if let wait = state.resubscribeWait {
                    state.resubscribeWait = nil
                    subscriptions[service] = state
                    let asked =
                        if case .seconds(let seconds) = wait { Duration.seconds(seconds) } else { nil as Duration? }
                    throw PluginError(
                        "subscription to \(target.package.sipEvent) ended: \(reason); waiting", retryAfter: asked)
                }
            }
            if state.needsRecreation || state.status.state != .active && state.status.state != .pending {
                openSubscription(target, service: service, resource: resource)
            }
        } else {
            openSubscription(target, service: service, resource: resource)
        }
        var flow = try await flow(for: path)
        // A flow opened since the last REGISTER (the old one was lost, or the address changed
        // again after the REGISTER) carries no binding yet: the registrar must see the REGISTER
        // first, whichever decision asked for this SUBSCRIBE. Waiting for one is no option: no
        // decision may be on its way (the registration's action already succeeded on another flow).
        if registration.granted != nil || registration.outcomeUnknown, registration.registeredFlow !== flow {
            logger.notice(
                "sip.subscribe-registers",
                metadata: ["event": "\(target.package.sipEvent)", "reason": "flow not registered"])
            try await register(path: path)
            flow = try await self.flow(for: path)
            guard registration.registeredFlow === flow else {
                throw PluginError("SUBSCRIBE \(target.package.sipEvent): the flow changed again while registering")
            }
        }
        try Task.checkCancellation()
        for _ in 0..<3 {
            guard let expires = subscriptions[service]?.expires else { throw CancellationError() }
            let response = try await sendSubscribe(service: service, expires: expires, over: flow)
            guard var current = subscriptions[service] else { throw CancellationError() }
            let status = response.status ?? 0
            switch status {
            case 200..<300:
                let toTag = response.tag(in: "To")
                current.dialogID =
                    dialogs.modify(current.dialogID) { dialog in
                        if let toTag { dialog.confirm(remoteTag: toTag) }
                        dialog.update(fromResponse: response)
                    } ?? current.dialogID
                current.status.expires = response.expires ?? current.expires
                if current.status.state == .none { current.status.state = .pending }
                subscriptions[service] = current
                logger.info(
                    "sip.subscribed", metadata: ["event": "\(target.package.sipEvent)", "service": "\(service)"])
                return
            case 481 where current.inDialog:
                logger.notice("sip.subscription-recreated", metadata: ["service": "\(service)"])
                openSubscription(target, service: service, resource: current.resource)
            case 423:
                guard let minimum = response.minExpires, minimum > current.expires
                else { throw PluginError.permanent("423 without a usable Min-Expires") }
                current.expires = minimum
                subscriptions[service] = current
            default:
                throw Self.failure(response, "SUBSCRIBE \(target.package.sipEvent)")
            }
        }
        throw PluginError("SUBSCRIBE \(target.package.sipEvent): no 2xx after recreating")
    }

    /// Replaces the service's subscription with a new one in a new, unconfirmed dialog (the old
    /// dialog and its forks leave the table, so their NOTIFYs are answered 481).
    private func openSubscription(_ target: SubscriptionTarget, service: ServiceID, resource: String) {
        dialogs.removeAll(ownedBy: service)
        let dialog = Dialog(callID: randomToken(), localTag: randomToken(), isSecure: resource.hasPrefix("sips:"))
        // A full table (a hostile peer cannot fill it: only this agent inserts) still sends.
        dialogs.insert(dialog, owner: service)
        var state = SubscriptionState(target: target, resource: resource, dialogID: dialog.id)
        state.expires = subscriptions[service]?.expires ?? target.expires
        subscriptions[service] = state
    }

    /// Ends a subscription with `Expires: 0` (no-op when none is established).
    public func unsubscribe(service: ServiceID, path: NetworkPath) async throws {
        guard let state = subscriptions[service], state.inDialog else {
            if let state = subscriptions[service] { dialogs.remove(state.dialogID) }
            subscriptions[service] = nil
            return
        }
        let flow = try await flow(for: path)
        try Task.checkCancellation()
        // Marked before sending: the notifier's final NOTIFY may overtake the 200, and it ends a
        // subscription this end is ending, not one to resubscribe (no `flow.lost` report). The
        // dialog stays, so that NOTIFY is answered 200, not 481.
        subscriptions[service]?.status.state = .unsubscribed
        let response = try await sendSubscribe(service: service, expires: 0, over: flow)
        guard let status = response.status, (200..<300).contains(status) || status == 481 else {
            throw Self.failure(response, "SUBSCRIBE (unsubscribe)")
        }
    }

    /// The subscriptions' flow was lost: each established one is recreated by its next SUBSCRIBE.
    func subscriptionsLostTheirFlow() {
        for (service, state) in subscriptions where state.inDialog { subscriptions[service]?.needsRecreation = true }
    }

    private func sendSubscribe(service: ServiceID, expires: Int, over flow: SIPTransport) async throws -> SIPMessage {
        guard let state = subscriptions[service], let dialog = dialogs[state.dialogID] else {
            throw CancellationError()
        }
        let uri = dialog.remoteTarget ?? state.resource
        var request = SIPMessage.request("SUBSCRIBE", uri: uri)
        for route in dialog.routeSet { request.headers.add("Route", route) }
        request.headers.add("From", "<\(account.addressOfRecord)>;tag=\(dialog.localTag)")
        request.headers.add("To", "<\(state.resource)>" + (dialog.remoteTag.map { ";tag=\($0)" } ?? ""))
        request.headers.add("Call-ID", dialog.callID)
        request.headers.add("CSeq", "0 SUBSCRIBE")
        request.headers.add("Contact", "<\(contactURI(on: flow))>")
        request.headers.add("Event", state.target.package.sipEvent)
        request.headers.add("Accept", state.target.package.acceptedBody)
        request.headers.add("Expires", "\(expires)")
        let id = state.dialogID
        return try await exchange(request, uri: uri, over: flow) {
            var cseq: UInt32 = 1
            dialogs.modify(id) { cseq = $0.nextLocalCSeq() }
            return cseq
        }
    }
}
