import ChildProcesses
import Foundation

/// A throw-away network namespace `nr-<random>` driven with iproute2, for fault injection.
///
/// Invariants: the name is unique per instance; everything created inside dies with the
/// namespace, which `deinit` deletes even when the test failed; only 198.18.0.0/15 and
/// 2001:db8::/32 addresses are used, and nothing is routed outside the namespace.
final class NetworkNamespace: Sendable {
    /// Root and iproute2: what these tests need. When false, the suites are disabled and
    /// ``FaultInjectionSupportTests`` says so loudly (and fails in CI).
    static let isSupported: Bool = geteuid() == 0 && ipPath != nil

    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    let name: String

    init() throws {
        name = "nr-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        try Self.run(["netns", "add", name])
        try ip("link set lo up")
    }

    deinit { _ = try? Self.run(["netns", "delete", name]) }

    /// Runs `ip -n NAME <arguments>` (split on spaces) and returns its standard output.
    @discardableResult
    func ip(_ arguments: String) throws -> String {
        try Self.run(["-n", name] + arguments.split(separator: " ").map(String.init))
    }

    /// Runs many `ip` commands in one process (`ip -n NAME -batch -`), fast enough to fit a
    /// flap storm inside a hold-down window.
    func batch(_ lines: [String]) throws {
        try Self.run(["-n", name, "-batch", "-"], input: lines.joined(separator: "\n") + "\n")
    }

    /// `veth0` (198.18.0.2/24, default route via 198.18.0.1) paired with `veth1`, both up.
    /// IPv6 addresses survive admin-down so tests see only what they cause.
    func addOnlineVeth() throws {
        try ip("link add veth0 type veth peer name veth1")
        try sysctl("net.ipv6.conf.all.keep_addr_on_down=1")
        try ip("addr add 198.18.0.2/24 dev veth0")
        try ip("link set veth1 up")
        try ip("link set veth0 up")
        try ip("route add default via 198.18.0.1 dev veth0")
    }

    /// Sets a sysctl inside the namespace, e.g. `net.ipv6.conf.all.keep_addr_on_down=1`.
    func sysctl(_ assignment: String) throws {
        try Self.run(["netns", "exec", name, "sysctl", "-qw", assignment])
    }

    struct CommandFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `ip` with posix_spawn, stdin/stdout/stderr redirected to temporary files (no pipes,
    /// so no deadlock and no EINTR surprises), and waits for it.
    @discardableResult
    static func run(_ arguments: [String], input: String? = nil) throws -> String {
        let base = NSTemporaryDirectory() + "nr-ip-\(UUID().uuidString)"
        let (inPath, outPath, errPath) = (base + ".in", base + ".out", base + ".err")
        defer { for path in [inPath, outPath, errPath] { unlink(path) } }
        _ = FileManager.default.createFile(atPath: inPath, contents: Data((input ?? "").utf8))

        let executable = ipPath ?? "/usr/sbin/ip"
        let status = try ChildProcess(
            [executable] + arguments, input: inPath, output: outPath, errors: .file(errPath), truncate: true
        ).waitForExit()

        let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            throw CommandFailed(description: "ip \(arguments.joined(separator: " ")) (status \(status)): \(err)")
        }
        return out
    }
}
