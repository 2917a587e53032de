import Glibc

/// A bare rtnetlink socket, used two ways by the benchmark: as the *floor* (a minimal reader
/// blocked in `recv`, the fastest anything can see a change) and as the *changer* that sends the
/// `RTM_NEWLINK` requests whose latency is measured. No libnl, no parsing beyond `ifinfomsg`.
final class RawNetlinkSocket: Sendable {
    let fd: Int32

    /// Opens a socket; `groups` is the legacy multicast mask (RTMGRP_LINK = 1) or 0 for requests.
    init(groups: UInt32) throws(BenchError) {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else { throw BenchError("netlink socket: \(String(cString: strerror(errno)))") }
        // struct sockaddr_nl { u16 family; u16 pad; u32 pid; u32 groups; }
        var address = [UInt8](repeating: 0, count: 12)
        address.store(UInt16(AF_NETLINK), at: 0)
        address.store(groups, at: 8)
        let bound = address.withUnsafeBytes {
            bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(12))
        }
        guard bound == 0 else { throw BenchError("netlink bind: \(String(cString: strerror(errno)))") }
        var size: Int32 = 4 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sets or clears IFF_UP on `ifindex` and waits for the kernel's ACK.
    func setAdminUp(ifindex: Int32, _ up: Bool, sequence: UInt32) throws(BenchError) {
        var message = [UInt8](repeating: 0, count: 32)
        message.store(UInt32(32), at: 0)  // nlmsg_len
        message.store(UInt16(16), at: 4)  // RTM_NEWLINK
        message.store(UInt16(1 | 4), at: 6)  // NLM_F_REQUEST | NLM_F_ACK
        message.store(sequence, at: 8)
        message.store(ifindex, at: 20)  // ifi_index
        message.store(UInt32(up ? 1 : 0), at: 24)  // ifi_flags
        message.store(UInt32(1), at: 28)  // ifi_change = IFF_UP
        guard send(fd, message, message.count, 0) == message.count else {
            throw BenchError("netlink send: \(String(cString: strerror(errno)))")
        }
        var reply = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &reply, reply.count, 0)
        guard n >= 20, reply.load(UInt16.self, at: 4) == 2 else { throw BenchError("netlink: no ACK") }
        let code = reply.load(Int32.self, at: 16)
        guard code == 0 else { throw BenchError("RTM_NEWLINK: \(String(cString: strerror(-code)))") }
    }

    /// Blocks until link messages arrive; calls `body(ifindex, flags)` for each RTM_NEWLINK.
    /// Returns false when the socket failed (closed), true after a batch.
    func readLinks(_ body: (Int32, UInt32) -> Void) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { return errno == ENOBUFS || errno == EINTR }
        var offset = 0
        while offset + 16 <= n {
            let length = Int(buffer.load(UInt32.self, at: offset))
            guard length >= 16, offset + length <= n else { break }
            if buffer.load(UInt16.self, at: offset + 4) == 16, length >= 32 {
                body(buffer.load(Int32.self, at: offset + 20), buffer.load(UInt32.self, at: offset + 24))
            }
            offset += (length + 3) & ~3
        }
        return true
    }
}

extension [UInt8] {
    fileprivate mutating func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        withUnsafeMutableBytes { $0.storeBytes(of: value, toByteOffset: offset, as: T.self) }
    }
    fileprivate func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
