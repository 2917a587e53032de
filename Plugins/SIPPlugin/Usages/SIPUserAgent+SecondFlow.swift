internal import Logging
internal import NIOCore
internal import ResilienceCore

/// RFC 5626 §4.2's second flow of an `outbound` account (`flows: 2`): "a UA can register
/// multiple flows ... to different edge proxies", each with its own `reg-id` and the same
/// `+sip.instance`. The account's second registration usage: its own Call-ID and CSeq, its own
/// flow to the next registrar target in RFC 3263 order (not the one the first flow is on).
///
/// Invariants: at most one second flow; it is registered after each 2xx of the first flow's
/// REGISTER (and refreshed with it), pinged after each of the first flow's pings on its own
/// (an OPTIONS, any answer proves it), moved when the first flow moves onto its server, and
/// removed (`expires=0`) with the account's unregistration. Its failures never touch the first
/// flow's registration: they are logged, the flow is dropped, and the next ping or refresh tries
/// again (bounded by the first flow's own pacing).
struct SecondFlowState {
    let callID = randomToken()
    let fromTag = randomToken()
    var cseq: UInt32 = 0
    /// The flow and the target it leads to; nil while none is open.
    var flow: SIPTransport?
    var target: SIPTarget?
    /// The Contact its last 2xx bound; nil while not bound.
    var boundContact: String?
    /// A registration or ping of it is under way (the actor is re-entrant): no second one.
    var busy = false
    /// The second server's last digest challenge (its nonces are not the first server's).
    var auth: AuthState?
}

extension SIPUserAgent {
    /// The `reg-id` of the second flow: the account's plus one (minus one at the top of the range).
    var secondRegID: Int? { account.regID.map { $0 < 65535 ? $0 + 1 : $0 - 1 } }

    /// Whether `lost` is the second flow (its loss is not the registration's).
    func isSecondFlow(_ lost: SIPTransport) -> Bool { secondFlow.flow === lost }

    /// The second flow's contact while it is bound (status and tests).
    public var secondFlowContact: String? { secondFlow.boundContact }

    /// Registers (or refreshes) the second flow on the first target that is not the first flow's,
    /// opening or moving it as needed; see the type's invariants. Never throws.
    func registerSecondFlow(path: NetworkPath) async {
        guard account.outboundFlows == 2, account.instanceID != nil, let regID = secondRegID, !secondFlow.busy
        else { return }
        secondFlow.busy = true
        defer { secondFlow.busy = false }
        guard let target = failover.targets.first(where: { $0 != failover.target }) else {
            return await dropSecondFlow(reason: "no other registrar target")
        }
        // The binding of an earlier address on the same server is removed with the new one.
        let previous = secondFlow.target == target ? secondFlow.boundContact : nil
        do {
            let flow = try await secondFlowTransport(to: target, path: path)
            let contact = contactURI(on: flow)
            let stale = previous.map { $0 == contact ? [] : ["<\($0)>;expires=0"] } ?? []
            let parameters = ";+sip.instance=\"<\(account.instanceID ?? "")>\";reg-id=\(regID)"
            let response = try await sendSecondRegister(
                contacts: ["<\(contact)>;expires=\(registration.expires)\(parameters)"] + stale, expires: nil,
                over: flow)
            guard let status = response.status, (200..<300).contains(status) else {
                throw Self.failure(response, "REGISTER (second flow)")
            }
            secondFlow.boundContact = contact
            logger.info("sip.second-flow-registered", metadata: ["target": "\(target)", "reg-id": "\(regID)"])
        } catch {
            logger.notice("sip.second-flow-failed", metadata: ["target": "\(target)", "error": "\(error)"])
            await dropSecondFlow(reason: "registration failed")
        }
    }

    /// Pings the second flow on its own (an OPTIONS over it, `timers.pongTimeout`); an
    /// unanswered ping drops it and registers a new one. Nothing while there is none.
    func pingSecondFlow(path: NetworkPath) async {
        guard account.outboundFlows == 2, !secondFlow.busy else { return }
        guard let flow = secondFlow.flow, secondFlow.boundContact != nil else {
            if registration.granted != nil { await registerSecondFlow(path: path) }
            return
        }
        // The first flow moved onto the second's server: the second moves on.
        if secondFlow.target == failover.target { return await registerSecondFlow(path: path) }
        secondFlow.busy = true
        let answered = (try? await pingDatagram(flow)) ?? false
        secondFlow.busy = false
        guard !answered else { return }
        logger.notice(
            "sip.second-flow-ping-timeout", metadata: ["target": "\(secondFlow.target.map(\.description) ?? "-")"])
        await dropSecondFlow(reason: "ping unanswered")
        await registerSecondFlow(path: path)
    }

    /// Removes the second flow's binding (`expires=0`) and closes it; errors are logged only. It
    /// waits at most `timers.pongTimeout`, so a dead second server cannot hold up the account's
    /// own unregistration (a shutdown).
    func unregisterSecondFlow() async {
        guard let flow = secondFlow.flow, let contact = secondFlow.boundContact else {
            return await dropSecondFlow(reason: "unregistered")
        }
        do {
            _ = try await withinPongTimeout {
                try await self.sendSecondRegister(contacts: ["<\(contact)>;expires=0"], expires: 0, over: flow)
            }
        } catch {
            logger.notice("sip.second-flow-unregister-failed", metadata: ["error": "\(error)"])
        }
        await dropSecondFlow(reason: "unregistered")
    }

    /// Closes the second flow (if any) and forgets its binding.
    func dropSecondFlow(reason: String) async {
        secondFlow.boundContact = nil
        secondFlow.target = nil
        guard let flow = secondFlow.flow else { return }
        secondFlow.flow = nil
        logger.info("sip.second-flow-closed", metadata: ["reason": "\(reason)"])
        table.flowClosed(ObjectIdentifier(flow))
        await flow.close(graceful: false)
    }

    /// The open second flow to `target` from the path's address, or a new one (the old closed).
    private func secondFlowTransport(to target: SIPTarget, path: NetworkPath) async throws -> SIPTransport {
        let remote = try target.socketAddress
        guard let local = Self.localAddress(in: path, family: remote.protocol == .inet6 ? .ipv6 : .ipv4) else {
            throw PluginError("no usable address for the second flow")
        }
        let interface = InterfaceBinding.interface(for: local, toward: remote, in: path)
        if let flow = secondFlow.flow, flow.isActive, flow.remote == remote, flow.localHost == local,
            flow.interface == interface
        {
            return flow
        }
        await dropSecondFlow(reason: "moved")
        let flow = try await openFlow(local: local, interface: interface, remote: remote)
        secondFlow.flow = flow
        secondFlow.target = target
        return flow
    }

    private func sendSecondRegister(contacts: [String], expires: Int?, over flow: SIPTransport) async throws
        -> SIPMessage
    {
        let request = registerRequest(
            contacts: contacts, expires: expires, callID: secondFlow.callID, fromTag: secondFlow.fromTag)
        return try await exchange(request, uri: "sip:\(account.domain)", over: flow, ofSecondFlow: true) {
            secondFlow.cseq += 1
            return secondFlow.cseq
        }
    }
}
