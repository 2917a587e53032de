public import ResilienceCore

/// The one door for call commands, for `netres run` and for a library user alike: place,
/// answer, reject, hold, resume and hang up a call of an account, and follow its events. Each
/// call is also a service of the plugin, so the policy's `hold-call`, `resume-call` and
/// `reinvite-call` reach the same calls through ``perform(_:context:)``.
///
/// Every command names the account; an unknown account is a permanent ``PluginError``.
extension SIPPlugin {
    /// Places a call from `account` to `target` with `media` giving the offer (nil: the built-in
    /// echo, whose keep-alive timer sleeps on the clock the runtime lends the plugin, see
    /// ``SIPUserAgent/defaultMedia()``); returns once the call is answered and ACKed (see
    /// ``SIPUserAgent/placeCall(to:media:path:)``).
    @discardableResult
    public func placeCall(
        account: String, to target: String, media: (any MediaSession)? = nil, path: NetworkPath
    ) async throws -> CallID {
        try await callAgent(account).placeCall(to: target, media: media, path: path)
    }

    /// Answers the ringing incoming call `call` of `account` with `media` (nil: the built-in echo
    /// on the plugin's lent clock, as for ``placeCall(account:to:media:path:)``).
    public func answer(
        _ call: CallID, account: String, media: (any MediaSession)? = nil, path: NetworkPath
    ) async throws {
        try await callAgent(account).answer(call, media: media, path: path)
    }

    /// Rejects the ringing incoming call `call` of `account` with `status` (486 by default).
    public func reject(_ call: CallID, account: String, status: Int = 486) async throws {
        try await callAgent(account).reject(call, status: status)
    }

    /// Holds the call for the user (``HoldReason/user``): the policy's resumes after an
    /// interruption leave it held.
    public func hold(_ call: CallID, account: String, path: NetworkPath) async throws {
        try await callAgent(account).hold(call, reason: .user, path: path)
    }

    /// Withdraws the user's hold; the call resumes unless an interruption still holds it.
    public func resume(_ call: CallID, account: String, path: NetworkPath) async throws {
        try await callAgent(account).resume(call, reason: .user, path: path)
    }

    /// Ends the call: BYE, CANCEL while ringing out, 603 while ringing here.
    public func hangUp(_ call: CallID, account: String, path: NetworkPath) async throws {
        try await callAgent(account).hangUp(call, path: path)
    }

    /// The calls of `account` that are not over, with their phase (empty for an unknown account).
    public func calls(of account: String) async -> [CallID: CallPhase] {
        await agent(for: account)?.activeCalls ?? [:]
    }

    /// Every change of every call of `account`, in order (nil for an unknown account). One
    /// stream per account: read it from one task.
    public func callEvents(of account: String) -> AsyncStream<CallEvent>? {
        agent(for: account)?.callEvents
    }

    private func callAgent(_ account: String) throws -> SIPUserAgent {
        guard let agent = agent(for: account) else {
            throw PluginError.permanent("sip: no account \"\(LogText.escaped(account, limit: 64))\"")
        }
        return agent
    }
}
