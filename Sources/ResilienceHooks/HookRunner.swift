import ChildProcesses
internal import Foundation
internal import Glibc
public import Logging
public import ResilienceCore
internal import Synchronization

/// Runs the executables of a directory on each path transition, one after the other, on one
/// worker of its own.
///
/// Invariants:
/// - ``submit(_:)`` never blocks or waits: a hook that hangs or fails never stops the caller.
/// - Newest wins: while hooks run for one transition, at most one more waits; a newer one
///   replaces it, and the number replaced is logged when the waiting one starts.
/// - Each hook runs without a shell, in a process group of its own, with stdin `/dev/null`, only
///   the ``HookEnvironment`` variables (plus `PATH`), and its output captured to a temporary file
///   whose last lines are logged. Past `timeout` the group gets SIGTERM, then SIGKILL 2 s later.
///   When a hook ends, whatever is left of its group is killed.
/// - After ``stop()`` returns, no hook process is left running.
public final class HookRunner: Sendable {
    public let directory: String
    public let timeout: Duration
    private let continuation: AsyncStream<PathTransition>.Continuation
    private let flags: Flags
    private let worker: Task<Void, Never>

    /// Time a timed-out hook's group has between SIGTERM and SIGKILL.
    public static let killGrace: Duration = .seconds(2)
    /// Most lines of a hook's output that are logged (its last ones).
    public static let loggedLines = 10
    /// Most bytes read from the end of a hook's output.
    static let loggedBytes = 4096

    public init(directory: String, timeout: Duration = .seconds(10), clock: WallClock = WallClock(), logger: Logger) {
        self.directory = directory
        self.timeout = timeout
        let (stream, continuation) = AsyncStream.makeStream(
            of: PathTransition.self, bufferingPolicy: .bufferingNewest(1))
        self.continuation = continuation
        let run = HookRun(directory: directory, timeout: timeout, logger: logger)
        let flags = Flags()
        self.flags = flags
        worker = Task {
            for await transition in stream {
                if flags.stopping.load(ordering: .acquiring) { break }
                let dropped = flags.coalesced.exchange(0, ordering: .acquiringAndReleasing)
                if dropped > 0 {
                    logger.info("hooks: coalesced older transitions", metadata: ["coalesced": "\(dropped)"])
                }
                let environment = HookEnvironment.variables(of: transition, clock: clock)
                for hook in run.hooks() {
                    if flags.stopping.load(ordering: .acquiring) { break }
                    await run.run(hook, environment: environment)
                }
            }
        }
    }

    /// Whether `path` names a directory (following symbolic links), for checking a hooks option.
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Queues hooks for `transition` and returns at once; replaces a transition still waiting.
    public func submit(_ transition: PathTransition) {
        if case .dropped = continuation.yield(transition) {
            flags.coalesced.add(1, ordering: .acquiringAndReleasing)
        }
    }

    /// Drops waiting transitions, lets a running hook finish within its timeout (then kills it)
    /// and returns when the worker has ended.
    public func stop() async {
        flags.stopping.store(true, ordering: .releasing)
        continuation.finish()
        await worker.value
    }

    /// State shared by ``submit(_:)``, ``stop()`` and the worker.
    private final class Flags: Sendable {
        /// Transitions replaced by newer ones since the worker last took one.
        let coalesced = Atomic<Int>(0)
        let stopping = Atomic<Bool>(false)
    }
}

/// One hook's run: listing, spawning, waiting with a deadline, logging.
struct HookRun: Sendable {
    let directory: String
    let timeout: Duration
    let logger: Logger

    /// Regular executable files of the directory, not hidden, sorted by name; listed anew each time.
    func hooks() -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            logger.warning("hooks: cannot list the directory", metadata: ["directory": "\(directory)"])
            return []
        }
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory + "/" + $0 }.filter { path in
            var info = stat()
            return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
        }
    }

    /// Runs `path` to its end or its timeout and logs how it ended.
    func run(_ path: String, environment: [String: String]) async {
        var metadata: Logger.Metadata = ["hook": "\(path)", "event": "\(environment["NETRES_EVENT"] ?? "")"]
        var template = Array("/tmp/netres-hook-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else {
            logger.error("hooks: cannot create an output file", metadata: metadata)
            return
        }
        close(fd)
        let outputPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(outputPath) }
        let child: ChildProcess
        do {
            child = try ChildProcess(
                [path], output: outputPath, truncate: true, newProcessGroup: true, environment: environment)
        } catch {
            metadata["error"] = "\(error)"
            logger.error("hooks: cannot start the hook", metadata: metadata)
            return
        }
        let status = await wait(for: child, until: .now + timeout)
        let output = Self.tail(of: outputPath)
        if !output.isEmpty { metadata["output"] = "\(output)" }
        switch status {
        case nil:
            metadata["timeout"] = "\(DurationText.format(timeout))"
            logger.warning("hooks: hook timed out and was killed", metadata: metadata)
        case let status? where status == 0:
            logger.info("hooks: hook ran", metadata: metadata)
        case let status?:
            metadata["status"] = "\(Self.describe(status))"
            logger.warning("hooks: hook failed", metadata: metadata)
        }
    }

    /// The child's raw wait status, or nil when it ran past `deadline` and was killed (reaped).
    private func wait(for child: ChildProcess, until deadline: ContinuousClock.Instant) async -> Int32? {
        if let status = await poll(child, until: deadline) { return status }
        kill(-child.pid, SIGTERM)
        if await poll(child, until: .now + HookRunner.killGrace) != nil { return nil }
        kill(-child.pid, SIGKILL)
        _ = child.waitForExit()
        return nil
    }

    /// Polls every 20 ms until the child exits (its status) or `deadline` passes (nil). Before
    /// the child is reaped, whatever it left in its process group is killed (the group id cannot
    /// have been reused yet).
    private func poll(_ child: ChildProcess, until deadline: ContinuousClock.Instant) async -> Int32? {
        while true {
            if child.hasExitedUnreaped() {
                kill(-child.pid, SIGKILL)
                return child.waitForExit()
            }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `exit 3`, `signal 9`.
    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        return signal == 0 ? "exit \((status >> 8) & 0xff)" : "signal \(signal)"
    }

    /// The last ``HookRunner/loggedLines`` lines of the file at `path`, read from its last bytes,
    /// joined by ` | ` so that one hook run stays one log line (a hook cannot forge log lines).
    static func tail(of path: String) -> String {
        guard let file = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? file.close() }
        let size = (try? file.seekToEnd()) ?? 0
        try? file.seek(toOffset: size > UInt64(HookRunner.loggedBytes) ? size - UInt64(HookRunner.loggedBytes) : 0)
        let data = (try? file.readToEnd()) ?? Data()
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
        return lines.suffix(HookRunner.loggedLines).joined(separator: " | ")
    }
}
