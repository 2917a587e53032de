import ChildProcesses
import Foundation

/// A scripted SIP peer on a loopback UDP socket, driven from its own thread with blocking,
/// time-bounded reads (so it never occupies the Swift concurrency pool).
final class UDPTestPeer: @unchecked Sendable {
    // Invariant: `fd` and `port` are fixed after init; the socket is used from one thread at a time.
    let fd: Int32
    let port: Int

    /// Binds `host`:`port` (0: a port the kernel picks).
    init(host: String = "127.0.0.1", port: Int = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw HarnessError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw HarnessError("bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// The wait for a datagram a script expects: a hang guard, never a bound on speed. A full
    /// run can hold the agent (and a ManualClock test's driver) back for tens of seconds on a
    /// two-core machine, so a script that waited less would give up on a datagram still coming.
    /// Shorter waits check for silence.
    static let arrivalGuard: Double = 30

    /// Whether a datagram has arrived yet (read and written on the script's one thread).
    private var heardAny = false

    /// The next datagram and its sender, or nil after `seconds`.
    ///
    /// Until the first datagram arrived, a wait of 5 s or more (one that expects something) lasts
    /// at least ``arrivalGuard``: the agent's first request is a hang guard's matter (a
    /// loaded machine starting the whole suite at once can hold it back for seconds), and a
    /// script that gave up early would leave the agent waiting for its timer F. Shorter waits
    /// check for silence and are kept as asked.
    func receive(within seconds: Double) -> (bytes: [UInt8], from: sockaddr_in)? {
        let wait = !heardAny && seconds >= 5 ? max(seconds, Self.arrivalGuard) : seconds
        let deadline = Date().addingTimeInterval(wait)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < deadline {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, &buffer, buffer.count, 0, $0, &length)
                }
            }
            if count >= 0 {
                heardAny = true
                return (Array(buffer[0..<count]), from)
            }
        }
        return nil
    }

    func send(_ bytes: [UInt8], to address: sockaddr_in) {
        var address = address
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Runs `script` on a new thread and returns its result.
    func run<T: Sendable>(_ script: @escaping @Sendable (UDPTestPeer) -> T) async -> T {
        await OffThePool.run(named: "netres-test-peer") { script(self) }
    }
}
