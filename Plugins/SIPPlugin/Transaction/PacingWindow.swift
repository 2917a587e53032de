/// How fast one registrar gets REGISTERs: a window of transactions in flight that grows with
/// clean answers and halves on retransmissions, under a rate ceiling.
///
/// A pure value (time is a parameter): ``RegistrarPacer`` performs its decisions. Invariants:
/// - at most `Int(window)` transactions are in flight, and `1 ≤ window ≤ maximumWindow`;
/// - while a transaction is in flight, the starts of any span of `T` seconds number at most
///   `Int(window) + T × ceiling` (a bucket of one window's worth of starts, refilled at the
///   ceiling): the window's worth leaves in one pass, so the due refreshes of many accounts cost
///   one wake-up and not one per REGISTER, and the registrar's socket buffer never holds more
///   than the window anyway. With none in flight the last one was answered already, so the next
///   starts at once (a clock that stands still in a test never holds a lone request);
/// - an answer without a retransmission adds one to the window (so after a flap the window
///   opens as fast as the registrar answers: it is clocked by its responses); an answer that
///   needed a retransmission, or none at all, halves it: the registrar (or its socket buffer)
///   is behind, and more requests would be dropped.
public struct PacingWindow: Hashable, Sendable {
    /// The knobs; the defaults suit a Kamailio with two UDP workers and its default buffers.
    public struct Settings: Hashable, Sendable {
        /// Most REGISTER transactions started per second, beyond one window's worth at once (a
        /// ceiling, not a target: the window is what keeps the registrar's buffer from
        /// overflowing). The default is what Kamailio 5.6 with two UDP workers took from sipp
        /// without a drop (4,000 users/s, each a challenged and an authenticated REGISTER;
        /// BENCHMARKS.md "Scale").
        public var ceiling: Int
        /// The window a registrar starts with (and returns to after nothing is in flight).
        public var initialWindow: Int
        /// The largest window, whatever the answers (stays well under a socket buffer's worth).
        public var maximumWindow: Int

        public init(ceiling: Int = 8000, initialWindow: Int = 8, maximumWindow: Int = 64) {
            self.ceiling = min(max(ceiling, 1), 100_000)
            self.maximumWindow = min(max(maximumWindow, 1), 10_000)
            self.initialWindow = min(max(initialWindow, 1), self.maximumWindow)
        }
    }

    public enum Decision: Hashable, Sendable {
        /// Start now (``start(at:)`` records it).
        case start
        /// The window has room but the ceiling says not before this instant.
        case wait(until: ContinuousClock.Instant)
        /// The window is full: wait for an answer.
        case full
    }

    public let settings: Settings
    public private(set) var window: Double
    public private(set) var inFlight = 0
    /// When the starts so far would have ended at the ceiling's pace (the generic cell rate
    /// algorithm's theoretical arrival time): a start may go once `ready - burst allowance` is past.
    private var ready: ContinuousClock.Instant?

    public init(settings: Settings = Settings()) {
        self.settings = settings
        self.window = Double(settings.initialWindow)
    }

    private var spacing: Duration { .seconds(1) / settings.ceiling }

    /// How many more transactions the window holds now (`0` when full). An answer can free two
    /// slots at once (one transaction ends and the window grows by one), so whoever waits for
    /// room admits this many, not one: otherwise the transactions in flight never exceed the
    /// initial window, however far it opens.
    public var room: Int { max(Int(window) - inFlight, 0) }

    public func decide(at now: ContinuousClock.Instant) -> Decision {
        guard room > 0 else { return .full }
        guard inFlight > 0, let ready else { return .start }
        // A bucket of one window's worth of starts: the first `Int(window)` go back to back.
        let allowed = ready - spacing * (Int(window) - 1)
        return allowed > now ? .wait(until: allowed) : .start
    }

    public mutating func start(at now: ContinuousClock.Instant) {
        // Nothing in flight: every start before was answered, so none of them counts against this one.
        let base = inFlight == 0 ? now : max(ready ?? now, now)
        inFlight += 1
        ready = base + spacing
    }

    /// How a transaction ended, for the window.
    public enum Ending: Hashable, Sendable {
        /// Its first transmission was answered.
        case answered
        /// It needed a retransmission, or got no answer at all.
        case retransmitted
        /// It was cancelled here (new epoch, shutdown): says nothing about the registrar.
        case abandoned
    }

    public mutating func finish(_ ending: Ending) {
        inFlight = max(inFlight - 1, 0)
        switch ending {
        case .answered: window = min(window + 1, Double(settings.maximumWindow))
        case .retransmitted: window = max(window / 2, 1)
        case .abandoned: break
        }
    }
}
