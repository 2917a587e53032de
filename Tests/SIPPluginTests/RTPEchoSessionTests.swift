import Foundation
import Glibc
import Testing

@testable import SIPPlugin

/// The built-in media session on loopback: real UDP sockets, packets counted, echoed, and the
/// socket moved to another address on a rebind.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RTPEchoSessionTests {
    static func address(_ host: String, _ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    /// Whether a fresh UDP socket can bind `host:port` (true once nobody holds it).
    static func canBind(_ host: String, _ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = address(host, port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Sends `count` distinct packets to `host:port` and returns the echoes that came back
    /// (each waited for at most 5 s: a hang guard).
    static func exchange(_ peer: UDPTestPeer, to host: String, port: Int, count: Int) async -> [[UInt8]] {
        await peer.run { peer -> [[UInt8]] in
            var echoes: [[UInt8]] = []
            for index in 0..<count {
                peer.send(
                    [0x80, 0x00, 0x00, UInt8(index)] + Array(repeating: 0xD5, count: 160), to: address(host, port))
                guard let (bytes, _) = peer.receiveMedia(within: 5) else { break }
                echoes.append(bytes)
            }
            return echoes
        }
    }

    @Test func packetsAreCountedEchoedAndAfterARebindArriveAtTheNewAddressWhileTheOldPortCloses() async throws {
        let peer = try UDPTestPeer()
        let session = RTPEchoSession(mode: .echo)
        let media = try await session.describe(localAddress: "127.0.0.1", direction: .sendrecv, answering: nil)
        let firstPort = try #require(media.first?.port)
        #expect(firstPort > 0 && media.first?.formats == ["0"])
        try await session.negotiated(
            NegotiatedMedia(remoteAddress: "127.0.0.1", remotePort: peer.port, direction: .sendrecv))
        let echoes = await Self.exchange(peer, to: "127.0.0.1", port: firstPort, count: 5)
        #expect(echoes.count == 5 && echoes.map { $0[3] } == [0, 1, 2, 3, 4], "each packet came back as sent")
        #expect(await session.packetsReceived == 5)
        #expect(await session.packetsEchoed == 5)
        #expect(await session.lastSource == "127.0.0.1:\(peer.port)")

        let moved = try await session.describe(localAddress: "127.0.0.2", direction: .sendrecv, answering: nil)
        let secondPort = try #require(moved.first?.port)
        #expect(await session.localAddress == "127.0.0.2")
        #expect(Self.canBind("127.0.0.1", firstPort), "the old socket is closed")
        #expect(!Self.canBind("127.0.0.2", secondPort), "the new one is open")
        let after = await Self.exchange(peer, to: "127.0.0.2", port: secondPort, count: 3)
        #expect(after.count == 3)
        #expect(await session.packetsReceivedByAddress == ["127.0.0.1": 5, "127.0.0.2": 3])
        await session.close()
        #expect(Self.canBind("127.0.0.2", secondPort), "close releases the port")
    }

    @Test func aSinkCountsButNeverAnswersAndNothingIsEchoedBeforeNegotiation() async throws {
        let peer = try UDPTestPeer()
        for mode in [RTPEchoSession.Mode.sink, .echo] {
            let session = RTPEchoSession(mode: mode)
            let media = try await session.describe(localAddress: "127.0.0.1", direction: .sendrecv, answering: nil)
            let port = try #require(media.first?.port)
            if mode == .sink {
                try await session.negotiated(
                    NegotiatedMedia(remoteAddress: "127.0.0.1", remotePort: peer.port, direction: .sendrecv))
            }
            // One packet, one second's wait for an echo that must not come.
            let echoes = await peer.run { peer -> Int in
                peer.send([0x80, 0, 0, 1], to: Self.address("127.0.0.1", port))
                return peer.receiveMedia(within: 1) == nil ? 0 : 1
            }
            #expect(echoes == 0, "\(mode): no echo")
            for _ in 0..<100 where await session.packetsReceived == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(await session.packetsReceived == 1, "\(mode): counted")
            #expect(await session.packetsEchoed == 0, "\(mode): not echoed")
            await session.close()
        }
    }

    /// Issue 25: the echo was an open relay (100,000 datagrams from a non-peer, 40,494 at the
    /// call's peer). Latched to the negotiated address, a stranger's datagrams are dropped and
    /// counted, and the peer hears nothing of them; the peer itself is still echoed.
    @Test func aStrangersDatagramsAreDroppedAndCountedAndNothingReachesThePeer() async throws {
        let peer = try UDPTestPeer()
        let stranger = try UDPTestPeer()
        let session = RTPEchoSession(mode: .echo)
        let media = try await session.describe(localAddress: "127.0.0.1", direction: .sendrecv, answering: nil)
        let port = try #require(media.first?.port)
        try await session.negotiated(
            NegotiatedMedia(remoteAddress: "127.0.0.1", remotePort: peer.port, direction: .sendrecv))
        await stranger.run { stranger in
            for index in 0..<200 {
                stranger.send([0x80, 0, 0, UInt8(index % 256)], to: Self.address("127.0.0.1", port))
            }
        }
        var counted = false
        for _ in 0..<250 where !counted {
            counted = await session.packetsFromStrangers == 200
            if !counted { try await Task.sleep(for: .milliseconds(20)) }
        }
        let strangers = await session.packetsFromStrangers
        #expect(counted, "every stranger's datagram counted: \(strangers)")
        let leaked = await peer.run { peer in peer.receiveMedia(within: 1) == nil ? 0 : 1 }
        #expect(leaked == 0, "nothing reached the peer")
        #expect(await session.packetsEchoed == 0)
        let echoes = await Self.exchange(peer, to: "127.0.0.1", port: port, count: 3)
        #expect(echoes.count == 3, "the negotiated peer is still echoed")
        await session.close()
    }

    /// Sends one datagram from a fresh IPv6 socket to `[::1]:port`; true when the kernel took it.
    static func sendIPv6(to port: Int) -> Bool {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        address.sin6_port = UInt16(port).bigEndian
        let bytes: [UInt8] = [0x80, 0, 0, 9]
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        } == bytes.count
    }

    @Test func anIPv6AddressIsBoundAndAMoveToIPv4RebindsTheSocket() async throws {
        let session = RTPEchoSession(mode: .sink)
        let media = try await session.describe(localAddress: "::1", direction: .sendrecv, answering: nil)
        let port = try #require(media.first?.port)
        #expect(Self.sendIPv6(to: port))
        var counted = false
        for _ in 0..<250 where !counted {
            counted = await session.packetsReceivedByAddress["::1"] == 1
            if !counted { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(counted, "the IPv6 datagram was counted on ::1")
        let moved = try await session.describe(localAddress: "127.0.0.1", direction: .sendrecv, answering: nil)
        #expect(await session.localAddress == "127.0.0.1" && moved.first?.port != nil)
        #expect(!Self.canBind("127.0.0.1", try #require(moved.first?.port)), "now bound on IPv4")
        await session.close()
    }
}

extension UDPTestPeer {
    /// As ``receive(within:)``, skipping RFC 6263 keep-alives (a bare 12-byte RTP header of a
    /// dynamic payload type): the media session sends one when a far end is negotiated.
    func receiveMedia(within seconds: Double) -> (bytes: [UInt8], from: sockaddr_in)? {
        let deadline = Date().addingTimeInterval(seconds)
        for _ in 0..<1_000 {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let datagram = receive(within: left) else { return nil }
            let keepAlive = datagram.bytes.count == 12 && datagram.bytes[1] & 0x7F >= 96
            if !keepAlive { return datagram }
        }
        return nil
    }
}
