import ChildProcesses
import Foundation
import Glibc
import Testing

/// The spawner every namespace and Kamailio test starts its processes with.
struct ChildProcessTests {
    func temporaryPath() -> String { NSTemporaryDirectory() + "nr-child-\(UUID().uuidString)" }

    /// A descriptor this process holds open (without close-on-exec) is not the child's: a test's
    /// socket must not outlive its close in a Kamailio or `netres` another test started.
    @Test func aChildInheritsOnlyStandardInputOutputAndError() throws {
        let held = open("/dev/null", O_RDONLY)
        try #require(held >= 0)
        let high = fcntl(held, F_DUPFD, 900)  // a number no child would open by itself
        close(held)
        defer { close(high) }
        try #require(high >= 900)
        let output = temporaryPath()
        defer { unlink(output) }
        let status = try ChildProcess(["/bin/ls", "-1", "/proc/self/fd"], output: output).waitForExit()
        #expect(status == 0)
        let descriptors = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").compactMap {
            Int($0)
        }
        #expect(descriptors.contains(2), "\(descriptors)")
        #expect(!descriptors.contains(Int(high)), "the child inherited descriptor \(high): \(descriptors)")
    }

    @Test func aGivenEnvironmentIsExactlyThoseVariablesPlusTheDefaultPath() throws {
        let output = temporaryPath()
        defer { unlink(output) }
        let given = try ChildProcess(["/usr/bin/env"], output: output, environment: ["NETRES_EVENT": "lost"])
        #expect(given.waitForExit() == 0)
        #expect(
            try String(contentsOfFile: output, encoding: .utf8)
                == "NETRES_EVENT=lost\nPATH=\(ChildProcess.defaultPath)\n")

        let ownPath = try ChildProcess(["/usr/bin/env"], output: output, truncate: true, environment: ["PATH": "/bin"])
        #expect(ownPath.waitForExit() == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "PATH=/bin\n")
    }

    @Test func anExitedChildIsSeenWithoutBeingReapedUntilWaitedFor() async throws {
        let child = try ChildProcess(["/bin/sleep", "30"], output: nil)
        #expect(!child.hasExitedUnreaped())
        kill(child.pid, SIGTERM)
        for _ in 0..<500 where !child.hasExitedUnreaped() { try await Task.sleep(for: .milliseconds(10)) }
        #expect(child.hasExitedUnreaped())
        #expect(kill(child.pid, 0) == 0, "not reaped yet: the pid is still this child's")
        #expect(child.waitForExit() & 0x7f == SIGTERM)
    }

    @Test func standardErrorCanGoToItsOwnFileAndTheStatusIsTheChildsOwn() throws {
        let (output, errors) = (temporaryPath(), temporaryPath())
        defer { for path in [output, errors] { unlink(path) } }
        let child = try ChildProcess(
            ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], output: output, errors: .file(errors), truncate: true)
        let status = child.waitForExit()
        #expect(status >> 8 & 0xff == 3)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "out\n")
        #expect(try String(contentsOfFile: errors, encoding: .utf8) == "err\n")
        #expect(child.hasExited())
    }

    /// More programs than Swift's concurrency pool has threads (one per core) each mark that
    /// they run, then wait for a flag that a task on that pool sets once every mark is there.
    /// Waited for with `runOffThePool` they run on threads of their own and all end at the flag;
    /// blocked on the pool's threads, the later ones would never start nor the flag be set, and
    /// each gives up after its 30 s bound with status 1.
    @Test func programsWaitedForOffThePoolLeaveThePoolsThreadsFree() async throws {
        let flag = temporaryPath()
        let waiters = ProcessInfo.processInfo.activeProcessorCount + 2
        let marks = (0..<waiters).map { "\(flag).\($0)" }
        defer { for path in marks + [flag] { unlink(path) } }
        let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
            for mark in marks {
                let script = "touch \(mark); for i in $(seq 600); do [ -e \(flag) ] && exit 0; sleep 0.05; done; exit 1"
                group.addTask { try await ChildProcess.runOffThePool(["/bin/sh", "-c", script]).exitCode }
            }
            group.addTask {
                for _ in 0..<600 {
                    if marks.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) {
                        return FileManager.default.createFile(atPath: flag, contents: nil) ? 0 : -1
                    }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return -1
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1) }
        }
        #expect(statuses.count == waiters + 1 && statuses.allSatisfy { $0 == 0 }, "\(statuses)")
    }

    @Test func aMissingProgramIsAClearError() {
        #expect(throws: ChildProcess.SpawnFailed.self) {
            try ChildProcess(["/nonexistent/program"], output: "/dev/null")
        }
    }
}
