import Synchronization

/// A task executor that runs nothing until the test says so: a task created with
/// `Task(executorPreference:)` runs its nonisolated code only inside ``runUntilIdle(limit:)``, on
/// the test's own thread.
///
/// Two uses:
/// - deciding exactly what happens between a continuation's resumption and the resumed task's
///   next step;
/// - checking that a call never blocks the thread it runs on (a synchronous wait in async code,
///   which on Swift's cooperative pool stalls every other task): start the call, then
///   ``runUntilIdle(limit:)`` returns as soon as the call suspends, while the event it waits for
///   has not happened yet. A call that blocks holds `runUntilIdle` instead, until that event,
///   which the test makes only after `runUntilIdle` returned: the call's own bound runs out first.
///   Then ``runUntil(within:_:)`` runs the call to its end.
///
/// Invariants: jobs run in the order they were enqueued, one at a time, only inside
/// ``runUntilIdle(limit:)``; a job enqueued while it runs (from any thread) runs in the same call.
public final class ManualTaskExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])

    public init() {}

    public func enqueue(_ job: UnownedJob) {
        jobs.withLock { $0.append(job) }
    }

    /// Whether no job waits to run.
    public var isIdle: Bool { jobs.withLock { $0.isEmpty } }

    /// Runs every queued job, and those they queue, until none is left or `limit` jobs ran (a
    /// hang guard: a test's tasks take a handful of steps).
    /// - Returns: false when jobs were still queued after `limit` of them ran.
    @discardableResult
    public func runUntilIdle(limit: Int = 10_000) -> Bool {
        for _ in 0..<max(limit, 0) {
            guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return true }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
        return isIdle
    }

    /// Runs jobs as they come (``runUntilIdle(limit:)``, then 10 ms of real time, and again)
    /// until `isDone` holds or `limit` has passed: a hang guard, never a timing assertion. Call it
    /// from a task that does not prefer this executor (the test's own).
    /// - Returns: whether `isDone` held.
    public func runUntil(within limit: Duration = .seconds(30), _ isDone: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while !isDone() {
            runUntilIdle()
            guard ContinuousClock.now < deadline else { return isDone() }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}
