/// Which connections a Contact's stream listener keeps (``ContactStreamListener``), so that no
/// stranger can hold the Contact closed to everyone else: a full listener makes room by closing
/// the connection idle longest, one source address holds at most ``perSource`` of them, and a
/// connection that has sent nothing ``firstByteWait`` after it was accepted is closed.
///
/// A pure value with time passed in. Invariants: after ``opened(_:source:at:)`` at most
/// ``maximum`` connections are listed and at most ``perSource`` of any one source; what made
/// room is returned once, to be closed by the caller; the connection just opened is never the
/// one evicted; an id is listed from ``opened(_:source:at:)`` until ``closed(_:)`` or its
/// eviction.
struct ContactConnections: Sendable {
    /// Connections one listener holds at once.
    static let maximum = 64
    /// Connections one source address holds at once (a proxy in front of many phones needs a few).
    static let perSource = 8
    /// A connection that sent nothing this long after it was accepted is closed.
    static let firstByteWait = Duration.seconds(5)

    private struct Entry: Sendable {
        var source: String
        var lastActive: ContinuousClock.Instant
        var spoke = false
    }

    private var entries: [Int: Entry] = [:]

    var count: Int { entries.count }

    /// Lists connection `id` from `source`; returns the connections it evicted: the longest idle
    /// of the same source when that source holds ``perSource`` already, else the longest idle of
    /// all when the listener holds ``maximum``.
    mutating func opened(_ id: Int, source: String, at now: ContinuousClock.Instant) -> [Int] {
        var evicted: [Int] = []
        let sameSource = entries.filter { $0.value.source == source }
        if sameSource.count >= Self.perSource, let oldest = Self.longestIdle(sameSource) {
            evicted.append(oldest)
            entries[oldest] = nil
        }
        if entries.count >= Self.maximum, let oldest = Self.longestIdle(entries) {
            evicted.append(oldest)
            entries[oldest] = nil
        }
        entries[id] = Entry(source: source, lastActive: now)
        return evicted
    }

    /// Connection `id` carried something at `now`.
    mutating func active(_ id: Int, at now: ContinuousClock.Instant) {
        entries[id]?.lastActive = now
        entries[id]?.spoke = true
    }

    /// Connection `id` has ended.
    mutating func closed(_ id: Int) { entries[id] = nil }

    /// Whether `id` is still listed and has sent nothing yet (checked ``firstByteWait`` after it
    /// was accepted: then it is closed).
    func isSilent(_ id: Int) -> Bool { entries[id].map { !$0.spoke } ?? false }

    /// The id idle longest (ties: the lowest id, the one accepted first).
    private static func longestIdle(_ entries: [Int: Entry]) -> Int? {
        entries.min { ($0.value.lastActive, $0.key) < ($1.value.lastActive, $1.key) }?.key
    }
}
