import ChildProcesses
import Foundation
import Glibc
import NIOCore

@testable import SIPPlugin

/// A scripted SIP peer listening on loopback TCP, used from its own thread with bounded waits.
final class TCPTestPeer: @unchecked Sendable {
    // Invariant: `listener` and `port` are fixed after init; used from one thread at a time.
    let listener: Int32
    let port: Int

    init() throws {
        // CLOEXEC: a child another test spawns meanwhile must not inherit the socket (it would keep a
        // connection open after this peer closed it).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        guard listener >= 0 else { throw HarnessError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard ok else { throw HarnessError("bind/listen failed") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(listener) }

    /// Whether a connection was accepted yet (read and written on the script's one thread).
    private var acceptedAny = false

    /// Accepts one connection within `seconds` (the first, when `seconds` is 5 or more, within at
    /// least `UDPTestPeer.arrivalGuard`: a hang guard, as for the UDP peer's first datagram);
    /// reads on it time out after 100 ms each.
    func accept(within seconds: Double) -> Int32? {
        let wait = !acceptedAny && seconds >= 5 ? max(seconds, UDPTestPeer.arrivalGuard) : seconds
        var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(wait * 1000)) == 1 else { return nil }
        acceptedAny = true
        let connection = Glibc.accept(listener, nil, nil)
        guard connection >= 0 else { return nil }
        _ = fcntl(connection, F_SETFD, FD_CLOEXEC)  // accept4 is hidden without _GNU_SOURCE
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return connection
    }

    /// Reads one framed SIP message from `connection` within `seconds`.
    func receive(on connection: Int32, within seconds: Double) -> SIPMessage? {
        ContactProbe.receive(on: connection, within: seconds).message
    }

    func send(_ bytes: [UInt8], on connection: Int32) {
        _ = bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func run<T: Sendable>(_ script: @escaping @Sendable (TCPTestPeer) -> T) async -> T {
        await OffThePool.run(named: "netres-test-peer") { script(self) }
    }
}
