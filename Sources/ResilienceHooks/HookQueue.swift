import ResilienceCore

/// What the hook worker runs next: a value state machine, no I/O.
///
/// Invariants: at most one transition waits (a newer one replaces it: newest wins, counted in
/// `coalesced`); call events wait in order, at most ``callCapacity`` of them (past it the oldest
/// is dropped and counted in `droppedCalls`), because each call event is news a transition is not;
/// jobs leave in the order they came.
struct HookQueue {
    static let callCapacity = 32

    enum Job: Sendable {
        case transition(PathTransition)
        case call([String: String])

        var isTransition: Bool {
            if case .transition = self { return true }
            return false
        }
    }

    private var jobs: [Job] = []
    private(set) var coalesced = 0
    private(set) var droppedCalls = 0

    mutating func submit(_ job: Job) {
        if job.isTransition, let waiting = jobs.firstIndex(where: \.isTransition) {
            jobs.remove(at: waiting)
            coalesced += 1
        }
        if !job.isTransition, jobs.count(where: { !$0.isTransition }) >= Self.callCapacity,
            let oldest = jobs.firstIndex(where: { !$0.isTransition })
        {
            jobs.remove(at: oldest)
            droppedCalls += 1
        }
        jobs.append(job)
    }

    /// The next job with the counts of what was replaced or dropped since the last one.
    mutating func next() -> (job: Job, coalesced: Int, droppedCalls: Int)? {
        guard !jobs.isEmpty else { return nil }
        defer { (coalesced, droppedCalls) = (0, 0) }
        return (jobs.removeFirst(), coalesced, droppedCalls)
    }

    var isEmpty: Bool { jobs.isEmpty }
}
