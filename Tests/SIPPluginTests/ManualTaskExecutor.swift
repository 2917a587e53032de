import Synchronization
import Testing

/// A task executor that runs nothing until the test says so, so a test can decide exactly what
/// happens between a continuation's resumption and the resumed task's next step (a task with
/// this executor preference runs its nonisolated code only inside `runUntilIdle()`).
final class ManualTaskExecutor: TaskExecutor {
    private let jobs = Mutex<[UnownedJob]>([])

    func enqueue(_ job: UnownedJob) {
        jobs.withLock { $0.append(job) }
    }

    /// Runs every queued job, and those they queue, until none is left (bounded, as a hang
    /// guard: a test's tasks take a handful of steps).
    func runUntilIdle() {
        for _ in 0..<10_000 {
            guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
        Issue.record("ManualTaskExecutor: still busy after 10,000 jobs")
    }
}
