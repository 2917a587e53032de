import ChildProcesses
import Glibc

/// Starts programs through the package's one `posix_spawn` helper, each leading its own process group.
enum ChildProcessLauncher {
    /// Starts `argv` with standard output (and error) appended to `output` (nil: this process's own); its PID.
    static func spawn(_ argv: [String], output: String?, environment: [String: String]? = nil) throws -> pid_t {
        try ChildProcess(
            argv, output: output, errors: output == nil ? .inherited : .output, newProcessGroup: true,
            environment: environment
        ).pid
    }
}
