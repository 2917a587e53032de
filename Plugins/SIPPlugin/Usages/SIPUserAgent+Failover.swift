internal import Logging
internal import NIOCore
public import ResilienceCore

extension SIPUserAgent {
    /// The registrar target requests go to now: RFC 3263's answer (cached by the plugin's
    /// `RegistrarDirectory`) at the position `RegistrarFailover` keeps.
    func currentTarget() async throws -> SIPTarget {
        failover.update(try await directory.targets(of: account, clock: clock))
        guard let target = failover.target else { throw PluginError("registrar \(account.registrarHost): no target") }
        return target
    }

    /// Registers (or refreshes) the Contact for the current path, on the current target, moving
    /// to the next target in RFC 3263 order at once when this one does not answer (a timeout, a
    /// refused or reset connection) or answers 5xx without Retry-After, so the first alternative
    /// costs no backoff. When every target failed, the last error is thrown (the executor's
    /// backoff applies) and the next attempt starts again at the preferred target.
    ///
    /// After a move, the subscriptions established on the old server are reported lost: the
    /// runtime subscribes them again once this registration is done (registration first), and
    /// new requests (SUBSCRIBE, INVITE) go where the account is bound.
    /// - Throws: `PluginError`: `retryAfter` for 503 with Retry-After, permanent for 4xx other
    ///   than 408/423/480 and for rejected credentials; the last target's error when all failed.
    public func register(path: NetworkPath) async throws {
        var tries = 0
        while true {
            let target = try await currentTarget()
            let supersededBefore = supersededOpenings
            do {
                try await registerOnCurrentTarget(path: path)
                failover.bound(at: clock.now)
                // RFC 5626 §4.2: the second flow (if any) is registered beside, on another server.
                if account.outboundFlows == 2 { Task { await self.registerSecondFlow(path: path) } }
                let previous = boundTarget
                boundTarget = target
                if let previous, previous != target {
                    followAccount(from: previous, to: target)
                    // Moved on because `previous` failed (not back to the preferred one, nor by a
                    // record change): calls record-routed through it are looked at, beside us.
                    if failover.isOnBackup { Task { await self.followCalls(awayFrom: previous, path: path) } }
                }
                return
            } catch let error as PluginError where error.isRetryable && error.retryAfter == nil && !Task.isCancelled {
                // A flow superseded while it opened (a newer path's flow replaced it): the
                // server was never tried, and the newer opening's REGISTER follows.
                guard supersededOpenings == supersededBefore else { throw error }
                tries += 1
                let moved = failover.failed(target)
                logger.warning(
                    "sip.failover",
                    metadata: [
                        "failed": "\(target)",
                        "next": "\(moved ? failover.target.map(\.description) ?? "-" : "backoff")",
                        "error": "\(error)",
                    ])
                guard moved, tries < failover.targets.count else { throw error }
            }
        }
    }

    /// The account is bound on another server now: its subscriptions are made again there (the
    /// old server's dialogs are gone with it, or will be).
    private func followAccount(from previous: SIPTarget, to target: SIPTarget) {
        // Those a lost flow reported already are being made again: not twice (`servicesOnFlow`).
        let subscribed = Array(servicesOnFlow.dropFirst())
        logger.notice(
            "sip.bound-elsewhere",
            metadata: ["from": "\(previous)", "to": "\(target)", "resubscribe": "\(subscribed.count)"])
        guard !subscribed.isEmpty else { return }
        subscriptionsLostTheirFlow()
        onFlowLost(subscribed)
    }

    /// A flow the server ended (reset, refused, an unanswered flow ping): when it went to the
    /// current target, the next registration goes to the next one. False for a probe's flow,
    /// which nothing rides on.
    func noteFlowLost(_ lost: SIPTransport) -> Bool {
        guard !probeFlows.contains(ObjectIdentifier(lost)) else { return false }
        if isSecondFlow(lost) {
            Task { await dropSecondFlow(reason: "lost") }
            return false
        }
        if let target = failover.target, target.matches(lost.remote) { failover.failed(target) }
        return true
    }

    /// While bound on a backup and a probe is due (`RegistrarFailover`), starts one probe of the
    /// preferred target beside the caller (a flow ping), never in its way: one OPTIONS over a flow
    /// of its own, answered within `timers.pongTimeout`. When it answers, the account's services
    /// are reported as on a lost flow, so the runtime registers there again and then
    /// resubscribes (registration first, paced and throttled like any loss); when it does not, the
    /// next probe waits longer. At most one probe runs at a time.
    func probePreferredIfDue(path: NetworkPath) {
        guard !probing, let preferred = failover.probeDue(at: clock.now) else { return }
        probing = true
        Task {
            let answered = await probe(preferred, path: path)
            finishProbe(of: preferred, answered: answered)
        }
    }

    private func finishProbe(of preferred: SIPTarget, answered: Bool) {
        probing = false
        logger.info("sip.preferred-probed", metadata: ["target": "\(preferred)", "answered": "\(answered)"])
        guard failover.isOnBackup, failover.preferred == preferred else { return }
        guard answered else { return failover.probeFailed(at: clock.now) }
        failover.probeAnswered()
        let services = servicesOnFlow
        subscriptionsLostTheirFlow()
        onFlowLost(services)
    }

    private func probe(_ target: SIPTarget, path: NetworkPath) async -> Bool {
        guard let remote = try? target.socketAddress,
            let local = Self.localAddress(in: path, family: remote.protocol == .inet6 ? .ipv6 : .ipv4),
            let flow = try? await openFlow(
                local: local, interface: InterfaceBinding.interface(for: local, toward: remote, in: path),
                remote: remote)
        else { return false }
        probeFlows.insert(ObjectIdentifier(flow))
        let answered = (try? await pingDatagram(flow)) ?? false
        await flow.close(graceful: false)
        probeFlows.remove(ObjectIdentifier(flow))
        return answered
    }
}

extension SIPTarget {
    var socketAddress: SocketAddress {
        get throws { try SocketAddress(ipAddress: address, port: port) }
    }

    func matches(_ remote: SocketAddress) -> Bool { (try? socketAddress) == remote }
}
