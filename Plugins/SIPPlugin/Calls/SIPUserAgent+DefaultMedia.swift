extension SIPUserAgent {
    /// The media of a call placed or answered without one (``placeCall(to:media:path:)``,
    /// ``answer(_:media:path:)`` and the plugin's call API): the built-in ``RTPEchoSession`` in
    /// echo mode whose keep-alive timer sleeps on this agent's clock, the one the runtime lends
    /// (``lend(clock:)``).
    ///
    /// Invariant: this is the one place the default is built, so a library user's call sleeps on
    /// the runtime's clock like the agent's own timers, never on a `ContinuousClock` of its own
    /// (whose first sleep wakes the process once a second for good).
    public nonisolated func defaultMedia() -> any MediaSession { RTPEchoSession(clock: clock) }
}
