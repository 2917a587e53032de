import Logging
import ResilienceCore
import SIPPlugin

/// The daemon's calls: placed, answered, held, resumed and ended through the SIP plugin's call
/// API (the one door a library user has too), with a built-in `RTPEchoSession` as each call's
/// media (headless), and listed for `netres ctl calls`.
///
/// Invariants:
/// - ``observe(_:account:)`` sees every call event of every account, in each agent's order; the
///   book (``CallBook``) is only changed there, so a listing is what the events said.
/// - A command is checked against the call's state first (answer only a ringing incoming call,
///   hold an active or remotely held one, resume a held one); a refusal names the state.
/// - A placement waits for its call's first event (the INVITE is about to go) or the agent's
///   failure, not for the answer: `netres ctl call` returns while the far end still rings.
/// - A new incoming call of an account with `incoming-calls: answer` or `reject` is answered
///   (echo media) or declined (603) at once; with `ring` it waits for `netres ctl`.
actor CallDesk {
    private let plugin: SIPPlugin
    private let accounts: [String: DaemonAccount]
    private let path: @Sendable () async -> NetworkPath
    private let logger: Logger
    /// The daemon's runtime clock: media keep-alive timers sleep on it, never `Task.sleep` (one
    /// `Task.sleep` starts libdispatch's once-a-second monitor for good; see `QuietConcurrencyRuntime`).
    private let clock: any RuntimeClock
    private var book = CallBook()
    private var media: [CallID: RTPEchoSession] = [:]
    private var placements: [Placement] = []
    private var placed = 0
    /// Bounds the notices of incoming calls the desk could not answer or decline: a forged
    /// INVITE cancelled at once makes one per INVITE.
    private var refusedNotices = LogThrottle()

    private struct Placement {
        let number: Int
        let account: String
        let peer: String
        let media: RTPEchoSession
        let reply: CheckedContinuation<Result<CallID, DaemonError>, Never>
    }

    /// - Parameter path: the manager's current path (the flow a command's request goes on).
    init(
        plugin: SIPPlugin, accounts: [DaemonAccount], path: @escaping @Sendable () async -> NetworkPath,
        logger: Logger, clock: any RuntimeClock
    ) {
        self.clock = clock
        self.plugin = plugin
        self.accounts = Dictionary(accounts.map { ($0.account.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.path = path
        self.logger = logger
    }

    /// Places a call from `account` to `uri` (checked by ``CallURI``) and returns its id once
    /// the INVITE is about to go.
    func place(account name: String, uri: String) async throws(DaemonError) -> CallID {
        guard accounts[name] != nil else {
            throw DaemonError("no account \"\(LogText.escaped(name, limit: 64))\"")
        }
        let path = await self.path()
        guard path.isSatisfied else { throw DaemonError("no network path: a call cannot be placed now") }
        placed += 1
        let number = placed
        let session = RTPEchoSession(clock: clock)
        let result = await withCheckedContinuation { reply in
            placements.append(Placement(number: number, account: name, peer: uri, media: session, reply: reply))
            Task { [plugin] in
                do {
                    _ = try await plugin.placeCall(account: name, to: uri, media: session, path: path)
                } catch {
                    self.placementFailed(number, error)
                }
            }
        }
        return try result.get()
    }

    private func placementFailed(_ number: Int, _ error: any Error) {
        guard let index = placements.firstIndex(where: { $0.number == number }) else { return }
        placements.remove(at: index).reply.resume(returning: .failure(DaemonError("call not placed: \(error)")))
    }

    /// Answers, hangs up, holds (for the user) or resumes the call `id`; returns its state after.
    func control(_ control: CallControl, id: CallID) async throws(DaemonError) -> CallPhase {
        guard let call = book.record(id) else { throw DaemonError("no call \"\(id)\"") }
        let allowed: Set<CallPhase> =
            switch control {
            case .answer: [.alerting]
            case .hangup: [.progressing, .alerting, .active, .held, .remotelyHeld]
            case .hold: [.active, .remotelyHeld]
            case .resume: [.held]
            }
        guard allowed.contains(call.phase) else {
            throw DaemonError(
                "call \(id) is \(call.phase.rawValue): \(control.rawValue) needs it "
                    + allowed.map(\.rawValue).sorted().joined(separator: " or "))
        }
        let path = await self.path()
        do {
            switch control {
            case .answer:
                let session = RTPEchoSession(clock: clock)
                media[id] = session
                try await plugin.answer(id, account: call.account, media: session, path: path)
            case .hangup: try await plugin.hangUp(id, account: call.account, path: path)
            case .hold: try await plugin.hold(id, account: call.account, path: path)
            case .resume: try await plugin.resume(id, account: call.account, path: path)
            }
        } catch {
            throw DaemonError("call \(id): \(control.rawValue) failed: \(error)")
        }
        return await plugin.calls(of: call.account)[id] ?? .ended
    }

    /// Takes in one call event of `account`'s agent.
    func observe(_ event: CallEvent, account: SIPAccount) {
        let isNew = book.apply(event, account: account, at: WallClock().rfc3339(.now))
        if event.phase == .ended {
            media[event.call] = nil
            return
        }
        guard isNew else { return }
        if event.direction == .outgoing,
            let index = placements.firstIndex(where: { $0.account == account.name && $0.peer == event.peer })
        {
            let placement = placements.remove(at: index)
            media[event.call] = placement.media
            placement.reply.resume(returning: .success(event.call))
        }
        if event.direction == .incoming, event.phase == .alerting {
            switch accounts[account.name]?.incomingCalls ?? .ring {
            case .ring: break
            case .answer:
                Task {
                    do {
                        _ = try await self.control(.answer, id: event.call)
                    } catch {
                        self.notice("calls: could not answer an incoming call", call: event.call, error: error)
                    }
                }
            case .reject:
                Task { [plugin] in
                    do {
                        try await plugin.reject(event.call, account: account.name, status: 603)
                    } catch {
                        self.notice("calls: could not decline an incoming call", call: event.call, error: error)
                    }
                }
            }
        }
    }

    /// Logs that an incoming call could not be answered or declined, at most
    /// `LogThrottle`'s limit per kind and window; the first one after a window names how many
    /// were held back. The error's text is escaped (it may quote the peer).
    private func notice(
        _ message: Logger.Message, call: CallID, error: any Error, at now: ContinuousClock.Instant = .now
    ) {
        guard case .log(let suppressed) = refusedNotices.admit(message.description, at: now) else { return }
        var metadata: Logger.Metadata = [
            "call": "\(call)", "error": "\(LogText.escaped(String(describing: error), limit: 200))",
        ]
        if suppressed > 0 { metadata["suppressed-before"] = "\(suppressed)" }
        logger.notice(message, metadata: metadata)
    }

    /// How many such notices of `message` the current window held back (for tests).
    func heldBackNotices(_ message: Logger.Message) -> Int { refusedNotices.pendingSuppressed(message.description) }

    /// Notes the outcome of the policy's re-INVITE of the call behind `service`.
    func recordRecovery(_ text: String, of service: ServiceID) { book.recordRecovery(text, of: service) }

    /// The calls with their media's address and RTP count, for `netres ctl calls`.
    func records() async -> [CallRecord] {
        var records = book.records
        for index in records.indices {
            guard let session = media[records[index].id] else { continue }
            if let address = await session.localAddress, let port = await session.localPort {
                records[index].mediaAddress = address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
            }
            records[index].packetsReceived = await session.packetsReceived
        }
        return records
    }
}
