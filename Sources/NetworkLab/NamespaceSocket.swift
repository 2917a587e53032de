import CProcessControl
import ChildProcesses
import Foundation
import Glibc

/// Runs a short body inside a network namespace on a thread made for it alone, which ends right
/// after (`OffThePool`): the one way the lab enters a namespace in-process. Sockets opened there stay in that
/// namespace for their whole life, whichever thread later uses them.
///
/// Invariant: `setns` never runs on a thread of Swift's shared pool, and the entered thread runs
/// nothing but `body`.
enum NamespaceThread {
    static func run<T: Sendable>(
        in namespace: String, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await OffThePool.run(named: "netlab-setns") {
            let fd = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw NetworkLabError(.commandFailed, "open /run/netns/\(namespace): \(errorText())")
            }
            let entered = cprocess_enter_netns(fd)
            close(fd)
            guard entered == 0 else { throw NetworkLabError(.commandFailed, "setns \(namespace): \(errorText())") }
            return try body()
        }
    }
}

/// `strerror(errno)`, for error messages.
func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

extension NetworkLab {
    /// A socket made inside `host` (`socket(domain, type, protocol)`), so a Swift client in the
    /// test process can talk from that host (e.g. a UDP socket, or a netlink socket that sees the
    /// host's links). The caller owns the descriptor and closes it; it closes on exec.
    public func socket(in host: LabHost, domain: Int32, type: Int32, protocol: Int32 = 0) async throws -> Int32 {
        do {
            return try await NamespaceThread.run(in: host.namespace) {
                let fd = Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
                guard fd >= 0 else {
                    throw NetworkLabError(.commandFailed, "socket(\(domain), \(type)) in \(host): \(errorText())")
                }
                return fd
            }
        } catch let failure as NetworkLabError {
            throw error(failure.code, failure.message)
        }
    }
}

/// Connects `fd` (a socket of ``NetworkLab/socket(in:domain:type:protocol:)``, AF_INET) to the
/// IPv4 literal `address` and `port`; `connect`'s result (0, or -1 with `errno` set; also -1 for
/// text that is no IPv4 literal or a port outside 1…65535).
public func connectIPv4(_ fd: Int32, to address: String, port: Int) -> Int32 {
    guard (1...65_535).contains(port) else { return -1 }
    var target = sockaddr_in()
    target.sin_family = sa_family_t(AF_INET)
    target.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, address, &target.sin_addr) == 1 else { return -1 }
    return withUnsafePointer(to: &target) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
}
