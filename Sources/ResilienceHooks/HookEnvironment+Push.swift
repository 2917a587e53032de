public import ResilienceCore

extension HookEnvironment {
    /// The variables of pushes and messages, present (empty) in every other kind too.
    static let pushNames = ["NETRES_PUSH_KIND", "NETRES_PUSH_PAYLOAD", "NETRES_MESSAGE_BODY"]

    /// NETRES_EVENT (`push`), NETRES_ACCOUNT, NETRES_PUSH_KIND (call, message, refresh),
    /// NETRES_PUSH_PAYLOAD (escaped, at most 200 characters) and NETRES_TIME; every transition
    /// and call variable present and empty.
    public static func variables(
        ofPush push: Push, at instant: ContinuousClock.Instant = .now, clock: WallClock
    ) -> [String: String] {
        var variables = Dictionary(uniqueKeysWithValues: (transitionNames + callNames + pushNames).map { ($0, "") })
        variables["NETRES_EVENT"] = "push"
        variables["NETRES_ACCOUNT"] = LogText.escaped(push.account, limit: Push.maximumAccountLength)
        variables["NETRES_PUSH_KIND"] = push.kind.rawValue
        variables["NETRES_PUSH_PAYLOAD"] = LogText.escaped(push.payload ?? "", limit: 200)
        variables["NETRES_TIME"] = clock.rfc3339(instant)
        return variables
    }
}

extension HookEnvironment {
    /// NETRES_EVENT (`message`), NETRES_ACCOUNT, NETRES_PEER (the sender, escaped) and
    /// NETRES_TIME; the caller adds NETRES_MESSAGE_BODY; every other variable present and empty.
    public static func variables(
        ofMessage account: String, from peer: String, at instant: ContinuousClock.Instant = .now, clock: WallClock
    ) -> [String: String] {
        var variables = Dictionary(uniqueKeysWithValues: (transitionNames + callNames + pushNames).map { ($0, "") })
        variables["NETRES_EVENT"] = "message"
        variables["NETRES_ACCOUNT"] = LogText.escaped(account, limit: 64)
        variables["NETRES_PEER"] = LogText.escaped(peer, limit: 200)
        variables["NETRES_TIME"] = clock.rfc3339(instant)
        return variables
    }
}
