internal import Logging
public import ResilienceCore

/// Calls placed, held, resumed and recovered by this end (RFC 3261 §13–§15, RFC 3264 offer/answer,
/// RFC 3311 UPDATE). Each command is one input of the call's ``CallMachine`` under a new
/// exchange; the agent performs what the machine decides and waits for the exchange's outcome.
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
        let machine = CallMachine(
            placing: dialog.id, sdp: newSessionDescriptions(), timers: timers, seed: .random(in: .min ... .max),
            at: clock.now)
        calls[id] = SIPCall(id: id, peer: target, media: media ?? defaultMedia(), machine: machine)
        try await request(id, over: flow) { .place($0, flow: $1) }
        return id
    }

    /// Holds the call for `reason` with a re-INVITE offering `sendonly` (`inactive` when the far
    /// end already holds us). A call already held for another reason only records this one.
    public func hold(_ id: CallID, reason: HoldReason = .user, path: NetworkPath) async throws {
        guard calls[id]?.machine.isEstablished == true else {
            throw PluginError.permanent("no established call \(id)")
        }
        try await request(id, over: try await flow(for: path)) { .hold(reason, $0, flow: $1) }
    }

    /// Withdraws `reason` for holding the call; the last reason gone resumes it with `sendrecv`.
    /// A call that stays held (the user still holds it) is re-offered as held only when the
    /// address moved: the policy drops a restore's `reinvite-call` that a `resume-call` covers.
    public func resume(_ id: CallID, reason: HoldReason = .user, path: NetworkPath) async throws {
        try await resume(id, reason: reason, path: path, survival: nil)
    }

    /// ``resume(_:reason:path:)`` on the path's return (the policy's `resume-call`): the survival
    /// budget is judged first, and a call over it is ended with BYE instead.
    func resume(_ id: CallID, reason: HoldReason, path: NetworkPath, survival: SurvivalCheck?) async throws {
        guard calls[id] != nil else { throw PluginError.permanent("no call \(id)") }
        let flow = try await flow(for: path)
        try await request(id, over: flow) {
            .resume(reason, $0, flow: $1, address: flow.localHost, survival: survival)
        }
    }

    /// Re-INVITEs an established call over the flow for `path` (after an address change or a
    /// restored path): new Contact, new `c=`/`m=` from the media session (which rebinds), the
    /// same hold state. A far end that allows UPDATE gets an UPDATE instead (RFC 3311: the same
    /// offer and target refresh, no ACK round). The answer is reported with trigger `network`,
    /// the downtime of `loss`, the round trip and the recovery time. A call that lived through
    /// `loss` longer than the survival budget is ended with BYE instead (trigger and reason
    /// `outage`); an outgoing call still ringing is rung again from the new flow. One offer runs
    /// at a time and a burst of changes ends in one re-INVITE (the call machine decides, `CallMachine`).
    /// - Parameters:
    ///   - id: the call.
    ///   - path: the path now; the flow and the media address come from it.
    ///   - loss: the last loss of the path (`PluginContext.lastPathLoss`), nil for none.
    ///   - budget: the policy's call survival budget from the action's context
    ///     (`PluginContext.callSurvivalBudget`); nil falls back to ``callSurvivalBudget``.
    public func reinvite(
        _ id: CallID, path: NetworkPath, after loss: Range<ContinuousClock.Instant>? = nil, budget: Duration? = nil
    ) async throws {
        guard let call = calls[id] else { throw PluginError.permanent("no call \(id)") }
        guard call.dialogID.remoteTag != nil else { return try await recoverEarly(id, path: path) }
        let flow = try await flow(for: path)
        let survival = SurvivalCheck(loss: loss, budget: budget ?? callSurvivalBudget)
        try await request(id, over: flow) { .recover($0, flow: $1, survival: survival) }
    }

    /// Feeds an offer request of call `id` (under a new exchange, over `flow`), performs what
    /// the call decides, and waits for the exchange's outcome. A cancelled caller abandons it:
    /// what waits ends at once, a request already out is still seen to its end.
    func request(_ id: CallID, over flow: SIPTransport, _ input: (ExchangeID, FlowNumber) -> CallInput)
        async throws
    {
        guard calls[id] != nil else { throw PluginError.permanent("call \(id) ended") }
        let exchange = calls.newExchange()
        let number = calls.number(of: flow)
        calls[id]?.flows[number] = flow
        await feed(id, input(exchange, number))
        let outcome = await withTaskCancellationHandler {
            await awaitOutcome(of: exchange)
        } onCancel: {
            Task { await self.feed(id, .abandon(exchange)) }
        }
        let response = calls.takeResponse(of: exchange)
        guard case .failed(let failure) = outcome else { return }
        throw failure.error(response: response, call: id)
    }

    private func awaitOutcome(of exchange: ExchangeID) async -> ExchangeOutcome {
        if let done = calls.takeOutcome(exchange) { return done }
        return await withCheckedContinuation { calls.wait(for: exchange, $0) }
    }

    /// Feeds one input to call `id`'s machine and performs what it decides (nothing once the
    /// call is gone); `inbound` is the far end's request the input came with.
    func feed(_ id: CallID, _ input: CallInput, inbound: FarEndRequest? = nil) async {
        guard let actions = calls[id]?.machine.handle(input, at: clock.now) else { return }
        await perform(actions, call: id, inbound: inbound)
    }

    /// A call's session descriptions, with a new random session id (RFC 4566 §5.2).
    func newSessionDescriptions() -> SDPOfferAnswer { SDPOfferAnswer(sessionID: .random(in: 1...999_999_999)) }

    /// A request in the call's dialog (``SIPMessage/inDialog(_:dialogID:dialog:peer:from:contact:)``);
    /// `dialog`: one no longer in the table (a deferred BYE's).
    func inDialogRequest(_ method: String, call: SIPCall, dialog: Dialog? = nil, flow: SIPTransport) -> SIPMessage {
        .inDialog(
            method, dialogID: call.dialogID, dialog: dialog ?? dialogs[call.dialogID], peer: call.peer,
            from: account.addressOfRecord, contact: contactURI(on: flow))
    }

    /// The dialog's next CSeq, taken from the table (so no other request reuses it).
    func nextCSeq(in dialogID: Dialog.ID) -> UInt32 {
        dialogs.modify(dialogID) { _ = $0.nextLocalCSeq() }.flatMap { dialogs[$0]?.localCSeq } ?? 1
    }
}
