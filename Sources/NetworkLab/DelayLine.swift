import ResilienceCore

/// The pure part of the user-space delay relay: a FIFO of frames, each due `delay ± jitter`
/// (uniform, seeded) after it arrived.
///
/// Invariants:
/// - frames leave in the order they arrived: a frame is never due before the one ahead of it
///   (jitter spreads the gaps, it never reorders, so TCP sees delay and not loss);
/// - no frame is due earlier than `delay - jitter` after it arrived (jitter ≤ delay, so never in the past);
/// - at most ``capacity`` frames and ``byteCapacity`` bytes wait; a frame beyond either is dropped
///   and counted, as a full queue drops on a real link;
/// - the due times depend only on the seed and the arrival times.
struct DelayLine {
    struct Frame {
        var bytes: [UInt8]
        var due: ContinuousClock.Instant
    }

    let delay: Duration
    let jitter: Duration
    let capacity = 50_000
    let byteCapacity = 64 << 20
    private var random: SplitMix64
    private var frames: [Frame] = []
    /// Index of the first frame still waiting (the array is compacted when half is spent).
    private var head = 0
    private var bytesWaiting = 0
    private(set) var dropped = 0
    private(set) var forwarded = 0

    init(delay: Duration, jitter: Duration, seed: UInt64) {
        self.delay = delay
        self.jitter = min(jitter, delay)
        random = SplitMix64(seed: seed)
    }

    /// When the first waiting frame is due, or nil when none waits.
    var nextDue: ContinuousClock.Instant? { head < frames.count ? frames[head].due : nil }

    /// How many frames wait now.
    var waiting: Int { frames.count - head }

    /// Queues `bytes`, arrived at `now`; false (and counted) when the line is full.
    @discardableResult
    mutating func arrive(_ bytes: [UInt8], at now: ContinuousClock.Instant) -> Bool {
        guard waiting < capacity, bytesWaiting + bytes.count <= byteCapacity else {
            dropped += 1
            return false
        }
        var due = now + delay
        if jitter > .zero {
            let span = UInt64(clamping: milliseconds(jitter) * 2_000)  // microseconds, both sides
            let offset = Int64(UInt64.random(in: 0...span, using: &random)) - Int64(span / 2)
            due += .microseconds(offset)
        }
        if let last = frames.last, head < frames.count, due < last.due { due = last.due }
        frames.append(Frame(bytes: bytes, due: due))
        bytesWaiting += bytes.count
        return true
    }

    /// Removes and returns the frames due at `now` (all of them with `flush`), in arrival order.
    mutating func takeDue(at now: ContinuousClock.Instant, flush: Bool = false) -> [[UInt8]] {
        var out: [[UInt8]] = []
        while head < frames.count, flush || frames[head].due <= now {
            out.append(frames[head].bytes)
            bytesWaiting -= frames[head].bytes.count
            frames[head].bytes = []
            head += 1
        }
        forwarded += out.count
        if head == frames.count {
            frames.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024, head * 2 > frames.count {
            frames.removeFirst(head)
            head = 0
        }
        return out
    }
}
