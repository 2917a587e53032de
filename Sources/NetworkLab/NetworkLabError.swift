/// Why the lab could not do what a test asked.
///
/// Invariant: every error names what was attempted and carries the lab's seed, so the failing run
/// can be replayed with `NETWORKLAB_SEED=<seed>`.
public struct NetworkLabError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The class of problem, stable for tests.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A helper program (`ip`, `nft`, `tc`, `kamcmd`) failed.
        public static let commandFailed = Code(rawValue: "command-failed")
        /// The machine cannot perform this fault (no netem, no nft, not root): never skipped silently.
        public static let unsupported = Code(rawValue: "unsupported")
        /// Something did not happen within its bound.
        public static let timedOut = Code(rawValue: "timed-out")
        /// A request the lab rejects (unknown host, a bound out of range).
        public static let invalidRequest = Code(rawValue: "invalid-request")
    }

    public var code: Code
    public var message: String
    /// The seed of the lab that failed (0 when no lab was involved).
    public var seed: UInt64

    public init(_ code: Code, _ message: String, seed: UInt64 = 0) {
        self.code = code
        self.message = message
        self.seed = seed
    }

    public var description: String {
        "NetworkLab \(code): \(message)" + (seed == 0 ? "" : " (seed \(seed); replay with NETWORKLAB_SEED=\(seed))")
    }
}
