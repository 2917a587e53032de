/// A retransmission interval as RFC 3261's timers A, E and G keep it: it starts at T1 and
/// doubles each time it fires, up to `cap` (none for timer A).
///
/// Invariant: ``current`` never exceeds `cap` once doubled, and never overflows (it stops
/// doubling at one hour whatever the cap).
struct RetransmitInterval: Hashable, Sendable {
    private(set) var current: Duration
    let cap: Duration?

    init(_ timers: SIPTimers, capped: Bool) {
        current = timers.t1
        cap = capped ? timers.t2 : nil
    }

    /// Doubles the interval (up to the cap) and returns it.
    mutating func doubled() -> Duration {
        current = min(current * 2, cap ?? .seconds(3_600))
        return current
    }

    /// Jumps to the cap (timer E once a provisional response arrived).
    mutating func capped() -> Duration {
        current = cap ?? current
        return current
    }
}
