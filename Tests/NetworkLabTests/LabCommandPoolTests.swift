import Foundation
import Glibc
import ResilienceTesting
import Synchronization
import Testing

@testable import NetworkLab

/// The lab's waits for its helper programs (`ip`, `nft`, `kamcmd`, Kamailio) hold no thread: a
/// lab test waits for dozens of them while the other suites of the process need the pool's two
/// threads.
///
/// Deterministic, not timed: the wait starts on a ``ManualTaskExecutor``, whose `runUntilIdle()`
/// returns only once the wait holds no thread; only then does the test let the program end (it
/// waits for the `go` file, at most 2000 × 10 ms). A wait that blocked the thread would hold
/// `runUntilIdle()` until the program gave up and exited 1.
struct LabCommandPoolTests {
    /// What the task under test got, once it got it.
    final class Outcome: Sendable {
        private let stored = Mutex<Int32?>(nil)
        var status: Int32? { stored.withLock { $0 } }
        func record(_ status: Int32) { stored.withLock { $0 = status } }
    }

    /// A folder with the `go` file's path and a program that exits 0 once `go` exists.
    final class Scratch {
        let folder = NSTemporaryDirectory() + "netres-lab-pool-\(UUID().uuidString)"
        var go: String { folder + "/go" }
        var program: [String] {
            [
                "/bin/sh", "-c",
                "i=0; while [ ! -e \(go) ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i + 1)); done; [ -e \(go) ]",
            ]
        }
        init() throws { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false) }
        deinit { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// Runs `wait` on a manual executor, lets the program end only once the executor is idle,
    /// and returns what `wait` returned.
    func statusOnceFreed(_ scratch: Scratch, _ wait: @escaping @Sendable () async -> Int32) async -> Int32? {
        let executor = ManualTaskExecutor()
        let outcome = Outcome()
        let task = Task(executorPreference: executor) { outcome.record(await wait()) }
        #expect(executor.runUntilIdle())
        #expect(outcome.status == nil, "the wait is suspended while the program runs")
        #expect(FileManager.default.createFile(atPath: scratch.go, contents: nil))
        #expect(await executor.runUntil { outcome.status != nil })
        await task.value
        return outcome.status
    }

    @Test func aProgramRunToItsEndIsWaitedForWithoutHoldingAThread() async throws {
        let scratch = try Scratch()
        let program = scratch.program
        let status = await statusOnceFreed(scratch) {
            do {
                try await LabCommand.run(program, timeout: .seconds(60))
                return 0
            } catch {
                return 1
            }
        }
        #expect(status == 0, "the program saw `go`, made after the executor was idle")
    }

    @Test func aChildIsReapedWithoutHoldingAThread() async throws {
        let scratch = try Scratch()
        let pid = try ChildProcessLauncher.spawn(scratch.program, output: "/dev/null")
        let status = await statusOnceFreed(scratch) { await LabCommand.reap(pid) }
        #expect(status == 0, "the child saw `go`, made after the executor was idle")
    }
}
