extension SIPPlugin {
    /// The process continues after a stop: each account reports its registration and
    /// established subscriptions and publication as possibly lost at their servers (see
    /// `SIPUserAgent.serverStateMayBeGone()`), so the runtime renews them all, registration first.
    public func processContinued() async {
        for account in accounts { await agent(for: account.name)?.serverStateMayBeGone(reason: "process continued") }
    }
}
