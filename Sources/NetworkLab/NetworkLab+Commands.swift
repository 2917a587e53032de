import Foundation
public import Glibc

extension NetworkLab {
    /// Runs `ip ARGUMENTS` to completion.
    @discardableResult
    func ip(_ arguments: [String]) async throws -> String {
        guard let ip = LabCommand.ip else { throw error(.unsupported, "iproute2 (`ip`) is not installed") }
        return try await LabCommand.run([ip] + arguments, seed: seed)
    }

    /// Runs many `ip` commands in `namespace` in one process (`ip -n NS -batch -`).
    func batch(_ namespace: String, _ lines: [String]) async throws {
        guard let ip = LabCommand.ip else { throw error(.unsupported, "iproute2 (`ip`) is not installed") }
        try await LabCommand.run(
            [ip, "-n", namespace, "-batch", "-"], input: lines.joined(separator: "\n") + "\n", seed: seed)
    }

    /// Runs `argv` (a program name or absolute path) in `host` to completion, within `timeout`; its output.
    @discardableResult
    public func run(in host: LabHost, _ argv: [String], timeout: Duration = .seconds(20)) async throws -> String {
        guard let ip = LabCommand.ip, let program = argv.first else {
            throw error(.invalidRequest, "nothing to run")
        }
        let resolved = try executableFile(program)
        return try await LabCommand.run(
            [ip, "netns", "exec", host.namespace, resolved] + argv.dropFirst(), timeout: timeout, seed: seed)
    }

    /// Starts `argv` in `host` (its own process group) with standard output appended to `output`
    /// (nil: this process's own) and standard error to `errors` (nil: wherever standard output goes);
    /// the lab stops it at shutdown, or ``stop(_:)`` earlier. Its PID.
    @discardableResult
    public func spawn(
        in host: LabHost, _ argv: [String], output: String?, errors: String? = nil,
        environment: [String: String]? = nil
    ) throws -> pid_t {
        guard let ip = LabCommand.ip, let program = argv.first else {
            throw error(.invalidRequest, "nothing to start")
        }
        let resolved = try executableFile(program)
        let pid = try ChildProcessLauncher.spawn(
            [ip, "netns", "exec", host.namespace, resolved] + argv.dropFirst(), output: output,
            errors: errors, environment: environment)
        children.append(pid)
        return pid
    }

    /// `program` as a host starts it: a path as given, a bare name from the system folders or
    /// `PATH`. A host shares this process's file system, so what is missing here is missing there.
    /// - Throws: ``NetworkLabError/Code/invalidRequest`` naming the program when it is no
    ///   executable file, before anything starts (a missing client binary fails the test at once).
    func executableFile(_ program: String) throws -> String {
        let searchPath = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map {
            "\($0)/\(program)"
        }
        let resolved =
            program.contains("/")
            ? program
            : LabCommand.executable(program) ?? searchPath.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let resolved, FileManager.default.isExecutableFile(atPath: resolved) else {
            throw error(
                .invalidRequest, "cannot start \(program): no executable file by that name (build it, or give its path)"
            )
        }
        return resolved
    }

    /// Stops a process ``spawn(in:_:output:errors:environment:)`` started (SIGTERM, SIGKILL to its group after 3 s).
    public func stop(_ pid: pid_t) async {
        guard let index = children.firstIndex(of: pid) else { return }
        children.remove(at: index)
        await LabCommand.stop(pid)
    }

    /// Whether a process the lab started has exited (reaped here), and its raw wait status.
    public func exitStatus(of pid: pid_t) -> Int32? {
        var status: Int32 = 0
        guard children.contains(pid), waitpid(pid, &status, WNOHANG) == pid else { return nil }
        children.removeAll { $0 == pid }
        return status
    }
}
