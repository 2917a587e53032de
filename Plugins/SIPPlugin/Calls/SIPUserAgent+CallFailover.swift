internal import Logging
internal import ResilienceCore

/// Calls across a server's death: when the account moves away from a server that stopped
/// answering, each confirmed call whose dialog is record-routed through that server is looked
/// at once (``DialogRouteFate``):
/// - a first Route that names a host which still resolves (RFC 3263, the registrar's cache) to a
///   living server keeps the call; its in-dialog requests keep their Route and ride the account's
///   flow, now bound on a living server;
/// - a first Route that is the dead server's address (or a name that resolves only to it) ends
///   the call with a reason that says so (call event trigger `server`), and one BYE is tried
///   straight to the far end's Contact, without the dead Route (RFC 3261 §12.2.1.1 with an empty
///   route set): bounded by one transaction timeout, its failure only logged;
/// - a call with no route set, or routed through another server, is left alone.
///
/// Invariants: looks at each call once per move, at most ``maximumCallsLooked`` calls; never
/// waits for a BYE; a call gone or changed during a lookup is skipped.
extension SIPUserAgent {
    /// The most calls looked at per move (an account has a handful; the rest are left alone).
    static let maximumCallsLooked = 64

    /// The account moved from `dead` to another server; see the extension's invariants.
    func followCalls(awayFrom dead: SIPTarget, path: NetworkPath) async {
        for (id, call) in calls.all.prefix(Self.maximumCallsLooked) where call.dialogID.remoteTag != nil {
            guard let routeSet = dialogs[call.dialogID]?.routeSet, !routeSet.isEmpty else { continue }
            var resolved: [SIPTarget] = []
            if let hop = DialogRouteFate.needsResolution(of: routeSet) {
                let explicitPort = DialogRouteFate.firstHopHasPort(routeSet)
                resolved =
                    (try? await directory.targets(
                        ofProxy: hop, explicitPort: explicitPort, transport: account.transport, clock: clock)) ?? []
            }
            guard calls[id]?.dialogID == call.dialogID, let dialog = dialogs[call.dialogID] else { continue }
            switch DialogRouteFate.decide(routeSet: routeSet, dead: dead, resolved: resolved) {
            case .unaffected:
                continue
            case .kept(let living):
                logger.notice("sip.call-route-kept", metadata: ["call": "\(id)", "via": "\(living)"])
            case .ended(let reason):
                await endUnroutable(id, call: call, dialog: dialog, reason: reason, path: path)
            }
        }
    }

    /// Ends a call no in-dialog request can reach any more and tries one BYE to its Contact.
    private func endUnroutable(_ id: CallID, call: SIPCall, dialog: Dialog, reason: String, path: NetworkPath) async {
        var direct = dialog
        direct.routeSet = []
        let flow = try? await self.flow(for: path)
        guard calls[id]?.dialogID == call.dialogID else { return }
        await feed(id, .terminate(trigger: "server", reason: reason, downtime: nil))
        guard let flow else { return }
        Task { await self.sendBye(of: call, dialog: direct, over: flow) }
    }
}
