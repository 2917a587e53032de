import Glibc
import NetworkLab
import Testing

/// The forced netlink overrun: a reader with a small receive buffer that is busy during the burst
/// gets ENOBUFS, as a real monitor would (measured here: 28 events fit libnl's default buffer).
@Suite(.needsLab, .timeLimit(.minutes(3)))
struct NetlinkOverrunFaultTests {
    /// A route netlink socket in the phone host that listens to IPv4 and IPv6 address changes,
    /// with the smallest receive buffer the kernel allows.
    func smallAddressListener(_ f: LabFixture) async throws -> Int32 {
        let fd = try await f.lab.socket(in: f.phone, domain: AF_NETLINK, type: Int32(SOCK_RAW.rawValue), protocol: 0)
        var size: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        // struct sockaddr_nl: family, pad, pid 0 (the kernel picks), groups IPV4_IFADDR | IPV6_IFADDR.
        var address = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: UInt16(AF_NETLINK)) { address.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: UInt32(0x10 | 0x100)) { address.replaceSubrange(8..<12, with: $0) }
        let bound = address.withUnsafeBytes {
            bind(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(12))
        }
        try #require(bound == 0, "bind: \(errno)")
        return fd
    }

    /// Reads what is queued (at most 10,000 messages); the errno that ended the read.
    func drain(_ fd: Int32) -> Int32 {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        for _ in 0..<10_000 {
            if recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) < 0 { return errno }
        }
        return 0
    }

    @Test func aBurstOverrunsABusyReaderAndLeavesNoAddressBehind() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let fd = try await smallAddressListener(f)
            defer { close(fd) }
            #expect(drain(fd) == EAGAIN, "nothing queued before the burst")
            let backend = try await lab.inject(.netlinkOverrun(f.wifi, changes: 500))
            #expect(backend == .iproute2Batch)
            #expect(drain(fd) == ENOBUFS, "the burst did not overrun a small buffer")
            #expect(!(try await f.phoneIP("address show wifi")).contains("198.19."), "the burst's addresses are gone")
        }
    }
}
