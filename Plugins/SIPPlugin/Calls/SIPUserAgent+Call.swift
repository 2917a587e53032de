internal import Logging
public import ResilienceCore
internal import Synchronization

/// Calls placed, held, resumed and ended by this end (RFC 3261 §13–§15, RFC 3264 offer/answer).
extension SIPUserAgent {
    /// The calls that are not over, with their phase.
    public var activeCalls: [CallID: CallPhase] { calls.all.mapValues(\.phase) }

    /// Places a call to `target` through the account's flow (the registrar is the outbound
    /// proxy) with `media` giving the offer (nil: ``defaultMedia()``, the built-in echo on the lent
    /// clock). Returns once the call is answered and ACKed.
    /// - Throws: `PluginError`: permanent when the far end rejects the call (the call is
    ///   reported ended with the status), retryable when no answer came in time.
    @discardableResult
    public func placeCall(to target: String, media: (any MediaSession)? = nil, path: NetworkPath)
        async throws -> CallID
    {
        let flow = try await flow(for: path)
        let id = CallID(randomToken())
        let dialog = Dialog(callID: randomToken(), localTag: randomToken(), isSecure: target.hasPrefix("sips:"))
        guard dialogs.insert(dialog, owner: account.callService(id)) else {
            throw PluginError("too many dialogs to place a call")
        }
        calls[id] = SIPCall(
            id: id, isOutgoing: true, peer: target, dialogID: dialog.id,
            offerAnswer: SDPOfferAnswer(sessionID: UInt64.random(in: 1...999_999_999)), media: media ?? defaultMedia(),
            phase: .progressing,
            createdAt: clock.now)
        report(id, trigger: "api")
        do {
            try await sendInvite(id, over: flow, hold: false)
        } catch {
            if calls[id]?.phase != .ended { end(id, trigger: "remote", reason: "\(error)") }
            throw error
        }
        return id
    }

    /// Holds the call for `reason` with a re-INVITE offering `sendonly` (`inactive` when the far
    /// end already holds us). A call already held for another reason only records this one.
    public func hold(_ id: CallID, reason: HoldReason = .user, path: NetworkPath) async throws {
        guard let call = calls[id], call.phase != .ended, call.dialogID.remoteTag != nil else {
            throw PluginError.permanent("no established call \(id)")
        }
        guard calls[id]?.machine.handle(.hold(reason), at: clock.now) == [.offer(hold: true)] else { return }
        do {
            try await sendInvite(id, over: try await flow(for: path), hold: true)
        } catch {
            _ = calls[id]?.machine.handle(.holdOfferFailed(reason, holding: true), at: clock.now)
            throw error
        }
    }

    /// Withdraws `reason` for holding the call; the last reason gone resumes it with `sendrecv`.
    /// A call that stays held (the user still holds it) is re-offered as held only when the
    /// address moved: the policy drops a restore's `reinvite-call` that a `resume-call` covers.
    public func resume(_ id: CallID, reason: HoldReason = .user, path: NetworkPath) async throws {
        guard let call = calls[id], call.phase != .ended else { throw PluginError.permanent("no call \(id)") }
        guard call.machine.holdReasons.contains(reason) else { return }
        let resumes = calls[id]?.machine.handle(.resume(reason), at: clock.now) == [.offer(hold: false)]
        let flow = try await flow(for: path)
        guard resumes else {
            if call.offerAnswer.lastSent?.connection?.address != flow.localHost {
                try await sendInvite(id, over: flow, hold: true)
            }
            return
        }
        do {
            try await sendInvite(id, over: flow, hold: false)
        } catch {
            _ = calls[id]?.machine.handle(.holdOfferFailed(reason, holding: false), at: clock.now)
            throw error
        }
    }

    /// A request in the call's dialog (§12.2.1.1): Request-URI and Route from the remote target
    /// and the route set (``Dialog/routing(fallbackTarget:)``), From/To with both tags. Via, CSeq and Max-Forwards are added by `exchange`.
    func inDialogRequest(_ method: String, call: SIPCall, flow: SIPTransport) -> SIPMessage {
        inDialogRequest(method, call: call, dialog: dialogs[call.dialogID], flow: flow)
    }

    /// ``inDialogRequest(_:call:flow:)`` for a dialog no longer in the table (a deferred BYE).
    func inDialogRequest(_ method: String, call: SIPCall, dialog: Dialog?, flow: SIPTransport) -> SIPMessage {
        let (uri, routes) = dialog?.routing(fallbackTarget: call.peer) ?? (call.peer, [])
        var request = SIPMessage.request(method, uri: uri)
        for route in routes { request.headers.add("Route", route) }
        request.headers.add("From", "<\(account.addressOfRecord)>;tag=\(call.dialogID.localTag)")
        request.headers.add("To", "<\(call.peer)>" + (call.dialogID.remoteTag.map { ";tag=\($0)" } ?? ""))
        request.headers.add("Call-ID", call.dialogID.callID)
        request.headers.add("CSeq", "0 \(method)")
        request.headers.add("Contact", "<\(contactURI(on: flow))>")
        return request
    }

    /// Sends an INVITE (initial or re-INVITE) with an offer and waits for its final answer:
    /// digest challenges answered, 491 retried after ``GlareWait``, 481/408 to a re-INVITE end
    /// the call (reported lost, no BYE), any other failure rolls the offer back (RFC 6141).
    /// A `recovery` re-INVITE's answer is reported with trigger `network` and its timings.
    func sendInvite(_ id: CallID, over flow: SIPTransport, hold: Bool, recovery: CallRecovery? = nil) async throws {
        try takeOfferSlot(id, method: "INVITE")
        defer { withdrawOffer(id) }
        var flow = flow
        var glareRetries = 0
        var challenges = 0
        var restarts = 0
        var generator = SystemRandomNumberGenerator()
        // Bounded: at most 2 challenges, GlareWait.maximumRetries glare retries and
        // maximumEarlyRestarts restarts follow the first attempt.
        for attempt in 0..<16 {
            // A superseded action sends nothing more; the INVITE already out was settled.
            if attempt > 0 { try Task.checkCancellation() }
            let (call, offer) = try await makeOffer(id, over: flow, hold: hold)
            let isReinvite = call.dialogID.remoteTag != nil
            var invite = inDialogRequest("INVITE", call: call, flow: flow)
            let cseq = nextCSeq(in: call.dialogID)
            invite.headers.set("CSeq", "\(cseq) INVITE")
            invite.headers.add("Allow", Self.allowedMethods)
            if !isReinvite, let replaces = call.replacing?.value { invite.headers.add("Replaces", replaces) }
            invite.headers.add("Content-Type", "application/sdp")
            invite.body = Array(offer.serialized().utf8)
            let uri = invite.requestURI ?? call.peer
            var request = SIPMessage(startLine: invite.startLine)
            request.headers.add(
                "Via", flow.newVia())
            request.headers.add("Max-Forwards", "70")
            for field in invite.headers { request.headers.add(field.name, field.value) }
            if let credentials = authorizationHeader(method: "INVITE", uri: uri) {
                request.headers.add(credentials.name, credentials.value)
            }
            request.body = invite.body
            calls[id]?.outgoingInvite = request
            calls[id]?.heardProvisional = false
            let sentAt = clock.now
            calls[id]?.offerInFlight = SentOffer(flow: flow, hold: hold, sentAt: sentAt)
            let (peer, retries) = (call.peer, glareRetries)
            let direction: CallDirection = call.isOutgoing ? .outgoing : .incoming
            // Its own task: once sent, the INVITE is settled (2xx ACKed and its answer taken in,
            // RFC 3261 §13.2.2.4) even when the executor cancels this action meanwhile.
            // A re-INVITE in a dialog without route set goes to the remote target (§12.2.1.1).
            let carrier = await dialogTransport(for: request, over: flow)
            let final = await Task { [request, carrier] in
                await self.settleInvite(request, call: id, over: carrier, recovery: recovery != nil) { now in
                    CallEvent(
                        call: id, phase: .active, trigger: recovery == nil ? "remote" : "network", peer: peer,
                        glareRetries: retries, direction: direction, downtime: recovery?.downtime,
                        reinviteRoundTrip: isReinvite ? now - sentAt : nil,
                        recoveryTime: recovery.map { now - $0.since })
                }
            }.value
            guard let response = final else {
                if isReinvite { throw PluginError("no answer to the re-INVITE of call \(id)") }
                if restarts < Self.maximumEarlyRestarts, let next = await flowForEarlyRestart(id, lost: flow) {
                    restarts += 1
                    restartEarly(
                        id, abandoning: request, heardProvisional: calls[id]?.heardProvisional == true, over: next)
                    flow = next
                    continue
                }
                end(id, trigger: "timeout", reason: "408")
                throw PluginError("no answer to the INVITE of call \(id)")
            }
            let status = response.status ?? 0
            let replacing = !isReinvite && calls[id]?.replacing != nil
            if (200..<300).contains(status) {
                // Hung up while ringing: the 2xx crossed our CANCEL and was ACKed and BYEd.
                guard calls[id] != nil else { throw PluginError.permanent("call \(id) was hung up before the answer") }
                calls[id]?.replacing = nil
                return
            }
            switch status {
            case 401 where challenges < 2, 407 where challenges < 2:
                challenges += 1
                let name = status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"
                guard let challenge = DigestChallenge.best(of: response.headers.values(name)) else {
                    throw Self.failure(response, "INVITE")
                }
                callAuth = AuthState(challenge: challenge, isProxy: status == 407)
            case 491 where isReinvite && glareRetries < GlareWait.maximumRetries:
                glareRetries += 1
                let wait = GlareWait.duration(ownsCallID: call.isOutgoing, using: &generator)
                logger.notice("sip.call-glare", metadata: ["call": "\(id)", "wait": "\(wait)"])
                try await waitOutGlare(id, method: "INVITE", wait: wait)
            case 481 where replacing, 420 where replacing, 486 where replacing:
                // The far end would not replace its early dialog (RFC 3891 §3: 481 for a dialog
                // it did not initiate, 486 for one answered meanwhile): CANCEL it, ring anew.
                guard let replaced = calls[id]?.replacing, restarts < Self.maximumEarlyRestarts else {
                    end(id, trigger: "remote", reason: "\(status)")
                    throw Self.failure(response, "INVITE")
                }
                restarts += 1
                calls[id]?.replacing = nil
                restartEarly(
                    id, abandoning: replaced.invite, heardProvisional: replaced.heardProvisional, over: flow,
                    replacesRefused: true)
            case 481 where isReinvite, 408 where isReinvite:
                end(id, trigger: "remote", reason: "\(status)")
                throw Self.failure(response, "re-INVITE")
            default:
                if !isReinvite { end(id, trigger: "remote", reason: "\(status)") }
                throw Self.failure(response, isReinvite ? "re-INVITE" : "INVITE")
            }
        }
        throw PluginError("INVITE of call \(id): too many attempts")
    }

    /// Our next offer in the call (new `o=` version, `c=`/`m=` on the flow's address, held or
    /// not), taken by the call's offer/answer state; the call as it stands after.
    func makeOffer(_ id: CallID, over flow: SIPTransport, hold: Bool) async throws -> (SIPCall, SessionDescription) {
        guard let before = calls[id] else { throw CancellationError() }
        let sections = try await before.media.describe(
            localAddress: flow.localHost, direction: hold ? .sendonly : .sendrecv, answering: nil)
        guard var call = calls[id] else { throw CancellationError() }
        let offer: SessionDescription
        do {
            offer = try call.offerAnswer.offer(address: flow.localHost, media: sections, hold: hold)
        } catch {
            throw PluginError("call \(id): \(error)")
        }
        calls[id] = call
        return (call, offer)
    }

    /// A 2xx to our INVITE: confirms the dialog, takes in the answer, tells the media session,
    /// and publishes `event` with the call's new phase; false when the call is gone or the
    /// answer was unusable (the offer is rolled back).
    @discardableResult
    func answered(_ id: CallID, response: SIPMessage, reporting event: CallEvent) async -> Bool {
        guard var call = calls[id] else { return false }
        let toTag = response.tag(in: "To")
        if let newID = dialogs.modify(
            call.dialogID,
            { dialog in
                if let toTag { dialog.confirm(remoteTag: toTag) }
                dialog.update(fromResponse: response)
            })
        {
            call.dialogID = newID
        }
        let negotiated: NegotiatedMedia?
        do {
            let answer = try SessionDescription.parse(response.body)
            negotiated = try call.offerAnswer.received(answer: answer)
        } catch {
            call.offerAnswer.rollback()
            calls[id] = call
            logger.warning("sip.call-bad-answer", metadata: ["call": "\(id)", "error": "\(error)"])
            return false
        }
        call.phase = call.confirmedPhase
        call.notePeerAllow(response)
        calls[id] = call
        if let negotiated { try? await call.media.negotiated(negotiated) }
        var event = event
        event.phase = call.phase
        publish(event)
        return true
    }

    /// Publishes the call's current phase.
    func report(_ id: CallID, trigger: String, _ note: String? = nil, glareRetries: Int = 0) {
        guard let call = calls[id] else { return }
        publish(
            CallEvent(
                call: id, phase: call.phase, trigger: trigger, peer: call.peer, reason: note,
                glareRetries: glareRetries,
                direction: call.isOutgoing ? .outgoing : .incoming))
    }

    /// To the public stream and to the plugin (which turns it into service reports).
    func publish(_ event: CallEvent) {
        callEventSink.yield(event)
        callObserver.withLock { $0 }?(event)
    }

    /// The call is over: its dialog leaves the table, its media closes, the end is reported.
    func end(_ id: CallID, trigger: String, reason: String, downtime: Duration? = nil) {
        guard var call = calls.remove(id) else { return }
        for timer in call.timers.values { timer.cancel() }
        callChanged(id)
        dialogs.remove(call.dialogID)
        call.phase = .ended
        let media = call.media
        Task { await media.close() }
        logger.info("sip.call-ended", metadata: ["call": "\(id)", "reason": "\(LogText.escaped(reason, limit: 64))"])
        publish(
            CallEvent(
                call: id, phase: .ended, trigger: trigger, peer: call.peer, reason: reason,
                direction: call.isOutgoing ? .outgoing : .incoming, downtime: downtime))
    }
}
