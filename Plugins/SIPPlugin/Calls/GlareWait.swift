/// RFC 3261 §14.1: the wait before retrying a re-INVITE that got 491: "If the UAC is the owner
/// of the Call-ID of the dialog ID ..., it MUST set a timer with a value randomly chosen between
/// 2.1 and 4 seconds in units of 10 ms. If the UAC is not the owner of the Call-ID of the dialog
/// ID, it MUST set a timer with a value randomly chosen between 0 and 2 seconds in units of 10
/// ms." RFC 3311 §5.2 applies it to UPDATE.
enum GlareWait {
    static func range(ownsCallID: Bool) -> ClosedRange<Int> { ownsCallID ? 210...400 : 0...200 }

    static func duration(ownsCallID: Bool, using generator: inout some RandomNumberGenerator) -> Duration {
        .milliseconds(10 * Int.random(in: range(ownsCallID: ownsCallID), using: &generator))
    }

    /// At most this many 491 retries of one offer before the old session is kept.
    static let maximumRetries = 3
}

/// The call's own random numbers (glare waits, `Retry-After`): SplitMix64 from a seed the agent
/// draws from the system's generator, so a call is a deterministic value a test can replay.
/// Not for anything a peer must not guess (tags and Call-IDs come from the system's generator).
struct CallRandom: RandomNumberGenerator, Hashable, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
