import Foundation
import Glibc

/// The socket-address side of ``ContactProbe``: blocking POSIX sockets, addresses made by
/// ``RTPEchoSessionTests/address(_:_:)`` and read by their bytes.
extension ContactProbe {
    static func address(_ host: String, _ port: Int) -> sockaddr_in { RTPEchoSessionTests.address(host, port) }

    /// The port of `address`.
    /// (Read from the bytes, `sin_port` at offset 2 in network order: naming the member picks
    /// whichever module's copy of the C struct the compiler loaded first.)
    static func port(of address: sockaddr_in) -> Int {
        withUnsafeBytes(of: address) { Int($0[2]) << 8 | Int($0[3]) }
    }

    /// A TCP connection to `host:port` (reads time out after 100 ms each), from the address
    /// `source` when given (another loopback address: another source host); nil when refused.
    static func connect(_ host: String, _ port: Int, from source: String? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        if let source {
            var local = address(source, 0)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard bound else {
                close(fd)
                return nil
            }
        }
        var target = address(host, port)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            return nil
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// The local port of a connected socket.
    static func localPort(of fd: Int32) -> Int {
        var local = address("0.0.0.0", 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return port(of: local)
    }
}
