import ResilienceCore

/// Where a lab's seed comes from. Every random choice of a lab is drawn from one ``SplitMix64``
/// seeded with it, so the same seed replays the same run.
enum LabSeed {
    /// `NETWORKLAB_SEED` when set (a replay), else a fresh seed.
    static func choose(environment: [String: String]) -> UInt64 {
        if let text = environment["NETWORKLAB_SEED"], let seed = UInt64(text), seed != 0 { return seed }
        return UInt64.random(in: 1...UInt64.max)
    }
}
