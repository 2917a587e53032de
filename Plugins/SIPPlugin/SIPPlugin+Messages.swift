extension SIPPlugin {
    /// The MESSAGEs `account` receives (RFC 3428), answered 200 by its agent; nil for an unknown
    /// account. One reader: the stream is the agent's.
    public func messages(of account: String) -> AsyncStream<InboundMessage>? { agent(for: account)?.messages }
}
