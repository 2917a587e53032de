import Foundation
import Logging
import ResilienceTesting
import Synchronization
import Testing

@testable import ResilienceHooks

/// A hook run holds no thread while its hook runs. In `netres run` every task shares one event
/// loop thread (and the test process's pool has two): a hook run that blocked its thread in
/// `waitpid` or `poll` would stop every SIP timer and socket of the daemon for as long as the
/// hook runs (its timeout: 10 s by default).
@Suite struct HookRunPoolTests {
    /// Set once by the task under test, read by the test.
    final class Flag: Sendable {
        private let raised = Atomic<Bool>(false)
        var isRaised: Bool { raised.load(ordering: .acquiring) }
        func raise() { raised.store(true, ordering: .releasing) }
    }

    /// Deterministic, not timed: the run starts on a ``ManualTaskExecutor``, whose
    /// `runUntilIdle()` returns only once the run waits without holding the thread. Only then
    /// does the test let the hook end (the hook waits for the `go` file). A run that blocked the
    /// thread would hold `runUntilIdle()` until the hook gave up on its own (its bound: 20 s),
    /// and the hook would fail instead of run.
    @Test func aHookThatWaitsForTheTestEndsBecauseItsRunLeftTheThreadFree() async throws {
        let folder = "/tmp/netres-hook-pool-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let hooks = folder + "/hooks"
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hooks)
        let (started, go) = (folder + "/started", folder + "/go")
        let hook = hooks + "/10-wait-for-the-test"
        try """
        #!/bin/sh
        : > \(started)
        i=0
        while [ ! -e \(go) ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i + 1)); done
        [ -e \(go) ]

        """.write(toFile: hook, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook)

        let records = LogRecords()
        let run = HookRun(
            directory: hooks, timeout: .seconds(60),
            logger: Logger(label: "hooks") { _ in RecordingLogHandler(records) })
        #expect(run.hooks() == [hook], "the test's hook is trusted: \(records.all.map(\.line))")
        let executor = ManualTaskExecutor()
        let finished = Flag()
        let task = Task(executorPreference: executor) {
            await run.run(hook, environment: [:])
            finished.raise()
        }
        #expect(executor.runUntilIdle())
        #expect(!finished.isRaised, "the run waits for its hook, suspended")
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(await executor.runUntil { finished.isRaised })
        await task.value
        #expect(FileManager.default.fileExists(atPath: started), "the hook ran")
        #expect(records.named("hooks: hook ran").count == 1, "\(records.all.map(\.line))")
        #expect(records.named("hooks: hook failed").isEmpty, "the hook gave up waiting: its run held the thread")
    }
}
