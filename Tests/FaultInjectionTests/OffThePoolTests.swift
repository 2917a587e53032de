import ChildProcesses
import Dispatch
import Foundation
import ResilienceTesting
import Synchronization
import Testing

/// The package's one way for async code to make a blocking call (Tests/README.md).
struct OffThePoolTests {
    /// What the task under test got, once it got it.
    final class Finished: Sendable {
        private let result = Mutex<Bool?>(nil)
        var value: Bool? { result.withLock { $0 } }
        func record(_ value: Bool) { result.withLock { $0 = value } }
    }

    /// Deterministic, not timed: the caller runs on a ``ManualTaskExecutor``, whose
    /// `runUntilIdle()` returns only once the caller is suspended. The blocking work waits for a
    /// signal the test gives only after that. Work run on the caller's thread would hold
    /// `runUntilIdle()` until its own bound (20 s) ran out, and return false.
    @Test func blockingWorkLeavesTheCallersThreadFreeUntilItEnds() async throws {
        let executor = ManualTaskExecutor()
        let gate = DispatchSemaphore(value: 0)
        let finished = Finished()
        let task = Task(executorPreference: executor) {
            let result = await OffThePool.run(named: "netres-test") { gate.wait(timeout: .now() + 20) == .success }
            finished.record(result)
        }
        #expect(executor.runUntilIdle())
        #expect(finished.value == nil, "the caller waits, suspended")
        gate.signal()
        #expect(await executor.runUntil { finished.value != nil })
        await task.value
        #expect(finished.value == true, "the work saw the signal given after the caller's thread was free")
    }

    struct Refused: Error, Equatable {}

    /// The kernel's id and name of the calling thread.
    static func currentThread() -> (id: String, name: String) {
        let id = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "?"
        return (id, ChildProcess.contents(of: "/proc/thread-self/comm").trimmingCharacters(in: .newlines))
    }

    @Test func theWorkRunsOnANewThreadOfItsNameAndItsErrorReachesTheCaller() async throws {
        let caller = Self.currentThread()
        let worker = await OffThePool.run(named: "netres-test") { Self.currentThread() }
        #expect(worker.name == "netres-test")
        #expect(worker.id != caller.id, "not the caller's thread (\(caller.id))")
        await #expect(throws: Refused.self) {
            try await OffThePool.run { () throws(Refused) -> Int in throw Refused() }
        }
    }
}
