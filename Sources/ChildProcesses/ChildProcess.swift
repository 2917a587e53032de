public import Glibc

/// A program started with `posix_spawn`, without a shell, for tests and benchmarks that drive
/// real processes (`ip`, Kamailio, `kamcmd`, `netres`). Foundation's `Process` is not used: in a
/// fresh network namespace its run loop's wake-up socket pair fails and `waitUntilExit` hangs.
///
/// Invariants of every child:
/// - it starts with an empty signal mask and default dispositions for the signals tests send
///   (the test runner's threads block some and ignore others; Kamailio needs its SIGCHLD);
/// - it inherits no descriptor but 0, 1 and 2 (glibc's `closefrom` spawn action): a socket or
///   pipe a concurrently running test holds open stays that test's alone, so closing it still
///   sends the FIN or EOF its peer waits for;
/// - with `newProcessGroup` it leads its own group, so `kill(-pid, …)` also reaches its children.
public struct ChildProcess: Sendable {
    public struct SpawnFailed: Error, CustomStringConvertible {
        public var description: String
    }

    /// Where standard error goes.
    public enum Errors: Sendable {
        /// Wherever standard output goes.
        case output
        /// This process's own standard error.
        case inherited
        /// A file, opened like the output file.
        case file(String)
    }

    public let pid: pid_t

    /// Starts `argv` (`argv[0]` an absolute path).
    /// - Parameters:
    ///   - input: read as standard input.
    ///   - output: standard output, appended to (created 0644), or truncated when `truncate`;
    ///     nil keeps this process's own.
    ///   - outputDescriptor: when set, standard output is this descriptor (a pipe's write end,
    ///     which the caller closes after the spawn) and `output` is ignored.
    ///   - errors: standard error.
    ///   - environment: nil inherits this process's environment; otherwise the child gets exactly
    ///     these variables, plus ``defaultPath`` as `PATH` unless they name one.
    public init(
        _ argv: [String], input: String = "/dev/null", output: String?, errors: Errors = .output,
        truncate: Bool = false, newProcessGroup: Bool = false, environment: [String: String]? = nil,
        outputDescriptor: Int32? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let mode = O_WRONLY | O_CREAT | (truncate ? O_TRUNC : O_APPEND)
        posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
        if let outputDescriptor {
            posix_spawn_file_actions_adddup2(&actions, outputDescriptor, 1)
        } else if let output {
            posix_spawn_file_actions_addopen(&actions, 1, output, mode, 0o644)
        }
        switch errors {
        case .output: posix_spawn_file_actions_adddup2(&actions, 1, 2)
        case .inherited: break
        case .file(let path): posix_spawn_file_actions_addopen(&actions, 2, path, mode, 0o644)
        }
        _ = Self.addCloseFrom?(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGCHLD, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if newProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let arguments = argv.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        let variables = environment.map { Self.entries($0) }
        defer { for variable in variables ?? [] { free(variable) } }
        var child = pid_t()
        let result =
            if let variables {
                posix_spawn(&child, argv[0], &actions, &attributes, arguments, variables + [nil])
            } else {
                posix_spawn(&child, argv[0], &actions, &attributes, arguments, environ)
            }
        guard result == 0 else {
            throw SpawnFailed(description: "spawn \(argv[0]): \(String(cString: strerror(result)))")
        }
        pid = child
    }

    /// Whether the child has exited; reaps it when it has (also true once reaped elsewhere).
    public func hasExited() -> Bool {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid || result < 0
    }

    /// Whether the child has exited, without reaping it: its pid (and so its process group id)
    /// stays reserved, so signalling `-pid` cannot reach an unrelated process.
    public func hasExitedUnreaped() -> Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo == SIGCHLD
    }

    /// Blocks until the child exits and returns its raw wait status (0: exited with status 0).
    public func waitForExit() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    /// `PATH` of a child given an environment without one.
    public static let defaultPath = "/usr/sbin:/usr/bin:/sbin:/bin"

    /// `NAME=value` strings (strdup'ed, sorted by name) of `environment` plus the default `PATH`.
    private static func entries(_ environment: [String: String]) -> [UnsafeMutablePointer<CChar>?] {
        var all = environment
        if all["PATH"] == nil { all["PATH"] = defaultPath }
        return all.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") }
    }

    /// glibc ≥ 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module
    /// does not export (it needs _GNU_SOURCE); nil on an older libc.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(
        nil, "posix_spawn_file_actions_addclosefrom_np"
    ).map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }
}
