import Glibc

/// Where a ``LabRegistrar``'s Kamailio runs, and so who starts, waits for and stops its processes:
/// a lab host (the lab, which enters the namespace in the child and owns the process) or loopback
/// (the registrar itself, through the same bounded helpers the lab uses).
enum RegistrarPlacement: Sendable {
    case host(NetworkLab, LabHost)
    case loopback

    var lab: NetworkLab? {
        if case .host(let lab, _) = self { lab } else { nil }
    }

    var host: LabHost? {
        if case .host(_, let host) = self { host } else { nil }
    }

    /// Starts `argv` in its own process group, standard output and error appended to `output`; its PID.
    func spawn(_ argv: [String], output: String) async throws -> pid_t {
        switch self {
        case .host(let lab, let host): try await lab.spawn(in: host, argv, output: output)
        case .loopback: try ChildProcessLauncher.spawn(argv, output: output)
        }
    }

    /// Whether `pid` (started by ``spawn(_:output:)``) has exited; reaps it.
    func hasExited(_ pid: pid_t) async -> Bool {
        switch self {
        case .host(let lab, _): return await lab.exitStatus(of: pid) != nil
        case .loopback:
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            return result == pid || result < 0
        }
    }

    /// SIGTERM, SIGKILL to the group after 3 s, reaped.
    func stop(_ pid: pid_t) async {
        switch self {
        case .host(let lab, _): await lab.stop(pid)
        case .loopback: await LabCommand.stop(pid)
        }
    }

    /// Runs `argv` to completion within `timeout`; its output.
    func run(_ argv: [String], timeout: Duration) async throws -> String {
        switch self {
        case .host(let lab, let host): try await lab.run(in: host, argv, timeout: timeout)
        case .loopback: try await LabCommand.run(argv, timeout: timeout)
        }
    }

    /// Adds a line to the lab's timeline (nothing on loopback, which has none).
    func record(_ what: String) async {
        if case .host(let lab, _) = self { await lab.record(what, backend: .kamailio) }
    }
}
