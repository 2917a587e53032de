internal import Foundation
import Glibc

extension ChildProcess {
    /// What a program run to completion printed, and how it ended.
    public struct Finished: Sendable {
        /// The raw wait status (0: exited with status 0).
        public var status: Int32
        public var output: String
        public var errors: String

        /// The exit code, or -1 when a signal ended the program.
        public var exitCode: Int32 { status & 0x7f == 0 ? (status >> 8) & 0xff : -1 }
    }

    /// Runs `argv` to completion, its standard output and error collected in temporary files
    /// (no pipe to drain, so a chatty program cannot block on a full one). Blocks the calling
    /// thread: from async code use ``runOffThePool(_:environment:)``.
    ///
    /// Use this, never Foundation's `Process`: besides hanging in a fresh network namespace,
    /// its `run()` reads past the end of a `readdir` buffer while it counts `/proc/self/fd`
    /// (found by AddressSanitizer), which crashed the whole test process when the buffer ended
    /// at a page boundary.
    public static func run(_ argv: [String], environment: [String: String]? = nil) throws -> Finished {
        var template = Array("/tmp/netres-run-XXXXXX".utf8CString)
        guard let directory = mkdtemp(&template) else {
            throw SpawnFailed(description: "mkdtemp: \(String(cString: strerror(errno)))")
        }
        let folder = String(cString: directory)
        let (outputPath, errorsPath) = (folder + "/out", folder + "/err")
        defer {
            unlink(outputPath)
            unlink(errorsPath)
            rmdir(folder)
        }
        let child = try ChildProcess(
            argv, output: outputPath, errors: .file(errorsPath), truncate: true, environment: environment)
        let status = child.waitForExit()
        return Finished(status: status, output: contents(of: outputPath), errors: contents(of: errorsPath))
    }

    /// ``run(_:environment:)`` through ``OffThePool``, for async callers (tests above all): the
    /// task waits without holding a thread of Swift's concurrency pool. That pool has one thread
    /// per core, two on the CI machine, so two tests blocked in `waitpid` there stall every other
    /// suite of the test process (and their time limits run on) while the programs run.
    public static func runOffThePool(_ argv: [String], environment: [String: String]? = nil) async throws -> Finished {
        try await OffThePool.run(named: "netres-run") { try run(argv, environment: environment) }
    }

    /// The child's raw wait status once it has exited (reaping it), or nil while it runs.
    public func exitStatusIfExited() -> Int32? {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid ? status : nil
    }

    /// A file's bytes as UTF-8 text (invalid sequences repaired); empty when unreadable. Reads
    /// to the end with `read(2)`, so a `/proc` file (size 0, one page per read) comes whole,
    /// where Foundation's `String(contentsOfFile:)` stops after its first page.
    public static func contents(of path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while case let count = read(fd, &chunk, chunk.count), count > 0 { bytes += chunk[..<count] }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The inodes of the sockets among the descriptors of `pid` ("self" for this process): its
    /// `/proc/PID/fd` links `socket:[INODE]`, the key of a socket's row in `/proc/net/*`. At most
    /// `limit` descriptors are looked at.
    public static func socketInodes(of pid: String, limit: Int = 65_536) -> Set<String> {
        let folder = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return Set(
            names.prefix(limit).compactMap { name in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(name)"),
                    target.hasPrefix("socket:["), target.hasSuffix("]")
                else { return nil }
                return String(target.dropFirst(8).dropLast())
            })
    }
}
