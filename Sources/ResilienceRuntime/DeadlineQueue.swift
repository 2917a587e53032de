internal import HeapModule

/// Deadlines by key, earliest first: the wake-up scheduler's refresh and ping instants.
///
/// A binary heap (swift-collections' `Heap`) beside a dictionary, so re-arming one key and
/// finding the earliest deadline cost O(log n) instead of a scan of every key (1,000 accounts
/// re-registering after a flap re-arm 1,000 times).
///
/// Invariants:
/// - The dictionary is the truth; a heap entry counts only while its key's generation is the
///   one stored (a re-armed or removed key leaves a stale entry, skipped when it surfaces).
/// - ``earliest()`` is the smallest stored deadline; ``removeDue(by:)`` returns every key whose
///   deadline is at or before the instant, each once, ordered by deadline then key, and forgets
///   them.
/// - Stale entries never outnumber live ones by more than ``slack``: the heap is rebuilt from
///   the dictionary before that, so churn cannot grow it without bound.
struct DeadlineQueue<Key: Hashable & Comparable & Sendable>: Sendable {
    typealias Instant = ContinuousClock.Instant

    private struct Entry: Comparable, Sendable {
        var deadline: Instant
        var key: Key
        var generation: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.deadline, lhs.key, lhs.generation) < (rhs.deadline, rhs.key, rhs.generation)
        }
    }

    /// Stale entries tolerated beyond the live ones before the heap is rebuilt.
    static var slack: Int { 64 }

    private var live: [Key: (deadline: Instant, generation: UInt64)] = [:]
    private var heap = Heap<Entry>()
    private var nextGeneration: UInt64 = 0

    /// Entries the heap holds, stale ones included (for tests of the bound).
    var storedEntries: Int { heap.count }

    var isEmpty: Bool { live.isEmpty }

    /// A key's deadline; setting nil forgets the key.
    subscript(key: Key) -> Instant? {
        get { live[key]?.deadline }
        set {
            guard let deadline = newValue else {
                live.removeValue(forKey: key)
                compactIfStale()
                return
            }
            if live[key]?.deadline == deadline { return }
            nextGeneration &+= 1
            live[key] = (deadline, nextGeneration)
            heap.insert(Entry(deadline: deadline, key: key, generation: nextGeneration))
            compactIfStale()
        }
    }

    /// The earliest deadline, dropping stale entries from the top.
    mutating func earliest() -> Instant? {
        while let top = heap.min {
            if isCurrent(top) { return top.deadline }
            _ = heap.popMin()
        }
        return nil
    }

    /// Forgets and returns every key due at or before `horizon`, earliest first.
    mutating func removeDue(by horizon: Instant) -> [Key] {
        var due: [Key] = []
        // Bounded: each pass removes one heap entry.
        while let top = heap.min, top.deadline <= horizon {
            _ = heap.popMin()
            guard isCurrent(top) else { continue }
            live.removeValue(forKey: top.key)
            due.append(top.key)
        }
        return due
    }

    private func isCurrent(_ entry: Entry) -> Bool { live[entry.key]?.generation == entry.generation }

    private mutating func compactIfStale() {
        guard heap.count > 2 * live.count + Self.slack else { return }
        heap = Heap(live.map { Entry(deadline: $0.value.deadline, key: $0.key, generation: $0.value.generation) })
    }
}
