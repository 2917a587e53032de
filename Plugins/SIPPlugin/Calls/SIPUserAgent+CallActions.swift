internal import Logging
internal import ResilienceCore
internal import Synchronization

/// The agent's side of ``CallMachine``: it carries out every action the value returns, in order,
/// and feeds back what came of the ones that do I/O (media described, responses to our offers,
/// timers fired), all through ``feed(_:_:inbound:)``. It decides nothing the value could.
///
/// Invariants: a call has at most one task per ``CallTimer``; arming a timer replaces (cancels)
/// the one before; every timer task ends with its call (``removeEnded(_:trigger:reason:downtime:)``
/// cancels them) and holds the agent weakly; a timer that fires for a call already gone does
/// nothing; once a call is gone only the completions still owed to its waiters are performed.
extension SIPUserAgent {
    /// Carries out `actions` for call `id`; `inbound` is the far end's request they answer.
    func perform(_ actions: [CallAction], call id: CallID, inbound: FarEndRequest? = nil) async {
        for action in actions {
            guard calls[id] != nil || action.isCompletion else { continue }
            switch action {
            case .arm(let timer, let at): arm(timer, at: at, call: id)
            case .disarm(let timer): calls[id]?.timers.removeValue(forKey: timer)?.cancel()
            case .sendRinging: sendRinging(id)
            case .respondToInvite(let status, let reason): refuseAnswering(id, status: status, reason: reason)
            case .retransmitAnswer:
                if let sent = calls[id]?.sentAnswer { sent.respond(sent.response, clock.now) }
            case .report(let report): self.report(id, report)
            case .note(let note): log(note, call: id)
            case .describeMedia(let request, let direction, let offer):
                await describeMedia(id, request, direction: direction, answering: offer)
            case .negotiated(let media):
                let session = calls[id]?.media
                try? await session?.negotiated(media)
            case .sendOffer(let send): await sendOffer(id, send)
            case .authorize(let exchange): authorize(exchange)
            case .cancelOffer(let flow): cancelOffer(id, over: flow)
            case .ringAgain(let exchange, let flow, let abandoned):
                await ringAgain(id, exchange, over: flow, abandoned: abandoned)
            case .acceptRequest: accept(inbound, call: id)
            case .sendAnswer(let answer): sendAnswer(answer, call: id)
            case .refuseRequest(let status, let reason, let retryAfter):
                guard let inbound else { continue }
                var refusal = inbound.request.makeResponse(status: status, reason: reason)
                if let retryAfter { refusal.headers.add("Retry-After", "\(retryAfter)") }
                inbound.respond(refusal, clock.now)
            case .declineOffer(let status, let reason): refuseAnswering(id, status: status, reason: reason)
            case .completed(let exchange, let outcome):
                if let call = calls[id] {
                    if call.outgoing?.exchange == exchange { calls[id]?.outgoing = nil }
                    let inUse = call.machine.flowsInUse
                    calls[id]?.flows = call.flows.filter { inUse.contains($0.key) }
                }
                calls.complete(exchange, outcome)
            case .end(let trigger, let reason, let downtime):
                removeEnded(id, trigger: trigger, reason: reason, downtime: downtime)
            case .bye(let trigger, let reason, let downtime):
                await byeEnded(id, trigger: trigger, reason: reason, downtime: downtime)
            }
        }
    }

    /// Starts `timer` of call `id`, firing at `at` on the lent clock.
    private func arm(_ timer: CallTimer, at: ContinuousClock.Instant, call id: CallID) {
        guard calls[id] != nil else { return }
        calls[id]?.timers[timer]?.cancel()
        calls[id]?.timers[timer] = Task { [weak self, clock] in
            guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
            await self?.timerFired(timer, call: id)
        }
    }

    private func timerFired(_ timer: CallTimer, call id: CallID) async {
        guard calls[id] != nil else { return }
        calls[id]?.timers[timer] = nil
        await feed(id, .timerFired(timer))
    }

    /// Publishes a report of call `id`.
    private func report(_ id: CallID, _ report: CallReport) {
        guard let call = calls[id] else { return }
        publish(report.event(of: id, peer: call.peer, outgoing: call.isOutgoing))
    }

    /// To the public stream and to the plugin (which turns it into service reports).
    func publish(_ event: CallEvent) {
        callEventSink.yield(event)
        callObserver.withLock { $0 }?(event)
    }

    /// Takes the ended call out: its timers stop, its dialog leaves the table, its media closes,
    /// the end is reported. Returns it with its dialog as it was (for a BYE).
    @discardableResult
    func removeEnded(_ id: CallID, trigger: String, reason: String, downtime: Duration?) -> (
        call: SIPCall, dialog: Dialog?
    )? {
        guard let call = calls.remove(id) else { return nil }
        for timer in call.timers.values { timer.cancel() }
        let dialog = dialogs[call.dialogID]
        dialogs.remove(call.dialogID)
        let media = call.media
        Task { await media.close() }
        logger.info("sip.call-ended", metadata: ["call": "\(id)", "reason": "\(LogText.escaped(reason, limit: 64))"])
        let end = CallReport(phase: .ended, trigger: trigger, note: reason, downtime: downtime)
        publish(end.event(of: id, peer: call.peer, outgoing: call.isOutgoing))
        return (call, dialog)
    }

    /// Ends the confirmed call and sends its BYE over the agent's flow (best effort).
    private func byeEnded(_ id: CallID, trigger: String, reason: String, downtime: Duration?) async {
        let flow = transport
        guard let ended = removeEnded(id, trigger: trigger, reason: reason, downtime: downtime),
            let dialog = ended.dialog, let flow
        else { return }
        await sendBye(of: ended.call, dialog: dialog, over: flow)
    }

    /// Logs what the call noted (rate-limited when a peer can provoke it).
    private func log(_ note: CallNote, call id: CallID) {
        let line = note.line(call: id)
        if line.bounded {
            throttledLog.log(line.level, line.message, metadata: line.metadata)
        } else {
            logger.log(level: line.level, "\(line.message)", metadata: line.metadata)
        }
    }
}
