import ChildProcesses
import Glibc

/// Starts programs through the package's one `posix_spawn` helper, each leading its own process group.
enum ChildProcessLauncher {
    /// Starts `argv` with standard output appended to `output` (nil: this process's own) and standard
    /// error to `errors` (nil: wherever standard output goes); its PID.
    static func spawn(
        _ argv: [String], output: String?, errors: String? = nil, environment: [String: String]? = nil
    ) throws -> pid_t {
        let errorTarget: ChildProcess.Errors = errors.map { .file($0) } ?? (output == nil ? .inherited : .output)
        return try ChildProcess(
            argv, output: output, errors: errorTarget, newProcessGroup: true, environment: environment
        ).pid
    }
}
