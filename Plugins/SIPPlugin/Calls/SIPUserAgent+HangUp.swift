internal import Logging
public import ResilienceCore

/// Hanging up: BYE, CANCEL or a final decline. While the network is gone a confirmed call ends
/// for the app at once and its BYE waits for the path to come back (the far end would
/// otherwise keep the call until its own timers end it).
///
/// Invariants of the deferred BYEs (kept in ``CallTable``): at most
/// ``CallTable/deferredByeLimit`` wait (the oldest is dropped, logged); each is tried once, on
/// the first satisfied path after the hang-up; the dialog left the table with the call, so
/// nothing else can use it meanwhile.
extension SIPUserAgent {
    /// Ends a call: BYE when confirmed, CANCEL for one still ringing out (reported ended at
    /// once; ``placeCall(to:media:path:)`` then throws: the call ended), a final 603 for
    /// an incoming one not yet answered. Without a network a confirmed call ends at once and its
    /// BYE goes when the path returns (`SIPPlugin.pathChanged(_:)`); a ringing one throws.
    public func hangUp(_ id: CallID, path: NetworkPath) async throws {
        guard let call = calls[id] else { return }
        if call.machine.isRinging { return await feed(id, .reject(status: 603, reason: "Decline")) }
        let flow: SIPTransport
        do {
            flow = try await self.flow(for: path)
        } catch {
            // No network: a confirmed call ends now and its BYE waits for the path.
            guard call.dialogID.remoteTag != nil, calls[id] != nil else { throw error }
            await deferBye(id, because: error)
            return
        }
        guard call.dialogID.remoteTag != nil else {
            try await hangUpRingingOut(id, flow: flow)
            return
        }
        try await bye(id, over: flow, trigger: "api", reason: "BYE")
    }

    /// Ends a confirmed call with BYE: reported ended at once, then the BYE's transaction runs.
    func bye(_ id: CallID, over flow: SIPTransport, trigger: String, reason: String) async throws {
        // The dialog leaves the table with the call; the BYE's CSeq continues from its copy.
        guard let call = calls[id], var dialog = dialogs[call.dialogID] else { return }
        let request = inDialogRequest("BYE", call: call, flow: flow)
        await feed(id, .terminate(trigger: trigger, reason: reason, downtime: nil))
        _ = try await exchange(request, uri: request.requestURI ?? call.peer, over: flow) { dialog.nextLocalCSeq() }
    }

    /// Ends the confirmed call `id` now and keeps its BYE for ``sendDeferredByes(path:)``.
    func deferBye(_ id: CallID, because error: any Error) async {
        guard let call = calls[id], let dialog = dialogs[call.dialogID] else { return }
        logger.notice(
            "sip.call-bye-deferred",
            metadata: ["call": "\(id)", "error": "\(LogText.escaped("\(error)", limit: 120))"])
        await feed(id, .terminate(trigger: "api", reason: "BYE", downtime: nil))
        if let dropped = calls.deferBye(of: call, dialog: dialog) {
            logger.warning(
                "sip.call-bye-dropped", metadata: ["call-id": "\(LogText.escaped(dropped.dialogID.callID, limit: 64))"])
        }
    }

    /// Sends the BYEs of calls hung up while the path was gone, over the flow for `path`.
    /// A BYE that fails is logged and forgotten (the far end's own timers end its side).
    func sendDeferredByes(path: NetworkPath) async {
        let pending = calls.takeDeferredByes()
        guard !pending.isEmpty else { return }
        let flow: SIPTransport
        do {
            flow = try await self.flow(for: path)
        } catch {
            logger.notice(
                "sip.call-bye-failed",
                metadata: ["count": "\(pending.count)", "error": "\(LogText.escaped("\(error)", limit: 120))"])
            return
        }
        for (call, dialog) in pending { await sendBye(of: call, dialog: dialog, over: flow) }
    }

    /// Sends the BYE of an ended call over `flow`, in `dialog` as it was when the call ended. A
    /// BYE that fails is logged and forgotten (the far end's own timers end its side).
    func sendBye(of call: SIPCall, dialog: Dialog, over flow: SIPTransport) async {
        var dialog = dialog
        let request = inDialogRequest("BYE", call: call, dialog: dialog, flow: flow)
        do {
            _ = try await exchange(request, uri: request.requestURI ?? call.peer, over: flow) { dialog.nextLocalCSeq() }
        } catch {
            logger.notice(
                "sip.call-bye-failed",
                metadata: [
                    "call-id": "\(LogText.escaped(call.dialogID.callID, limit: 64))",
                    "error": "\(LogText.escaped("\(error)", limit: 120))",
                ])
        }
    }
}
