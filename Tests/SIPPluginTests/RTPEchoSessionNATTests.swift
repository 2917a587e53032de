import Foundation
import Glibc
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The built-in media session on loopback with a far end whose NAT changed its media port
/// (symmetric RTP, ``RTPLatch``) and with a held stream kept alive (RFC 6263, ``RTPKeepAlive``).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct RTPEchoSessionNATTests {
    /// A PCMU packet with `sequence` and a 160-byte payload.
    static func pcmu(_ sequence: UInt16, ssrc: UInt8 = 0x42) -> [UInt8] {
        [0x80, 0x00, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0, 0, 0, 0, 0, ssrc]
            + Array(repeating: 0xD5, count: 160)
    }

    /// The far end signalled one port (where nothing ever sends) but its media comes from
    /// another: its second in-sequence packet latches it and is echoed back to where it came
    /// from; afterwards a stranger's perfect sequence is dropped and never answered.
    @Test func aFarEndWhosePortANATChangedIsEchoedFromItsSecondPacketAndStrangersStayRefused() async throws {
        let far = try UDPTestPeer()
        let signalled = try UDPTestPeer()
        let stranger = try UDPTestPeer()
        let session = RTPEchoSession(mode: .echo)
        let media = try await session.describe(localAddress: "127.0.0.1", direction: .sendrecv, answering: nil)
        let port = try #require(media.first?.port)
        try await session.negotiated(
            NegotiatedMedia(remoteAddress: "127.0.0.1", remotePort: signalled.port, direction: .sendrecv))
        let to = RTPEchoSessionTests.address("127.0.0.1", port)
        let echoes = await far.run { far -> [Bool] in
            (1...4).map { sequence in
                far.send(Self.pcmu(UInt16(sequence)), to: to)
                return far.receiveMedia(within: sequence == 1 ? 1 : 5) != nil
            }
        }
        #expect(echoes == [false, true, true, true], "the first packet is learnt, the rest echoed")
        #expect(await session.latchedSource == RTPEndpoint(address: "127.0.0.1", port: far.port))
        await stranger.run { stranger in
            for sequence in 1...20 { stranger.send(Self.pcmu(UInt16(sequence), ssrc: 7), to: to) }
        }
        let answered = await stranger.run { $0.receive(within: 1) != nil }
        #expect(!answered, "nothing goes to the stranger")
        var dropped = false
        for _ in 0..<250 where !dropped {
            dropped = await session.packetsFromStrangers >= 21
            if !dropped { try await Task.sleep(for: .milliseconds(20)) }
        }
        let strangers = await session.packetsFromStrangers
        #expect(dropped, "the first packet and the stranger's 20: \(strangers)")
        #expect(await session.latchedSource?.port == far.port, "the latch did not move")
        await session.close()
    }

    /// A held stream (the far end sends nothing, we send nothing): keep-alives go out from the
    /// media port itself, one when the far end is negotiated and then one per interval, each a
    /// bare RTP header of a dynamic payload type that was not negotiated, sequence numbers one
    /// apart; none after the call ends.
    @Test func aHeldStreamSendsKeepAlivesFromItsMediaPortUntilTheCallEnds() async throws {
        let far = try UDPTestPeer()
        let session = RTPEchoSession(mode: .echo, keepAliveInterval: .milliseconds(300))
        let media = try await session.describe(localAddress: "127.0.0.1", direction: .sendonly, answering: nil)
        let port = try #require(media.first?.port)
        try await session.negotiated(
            NegotiatedMedia(remoteAddress: "127.0.0.1", remotePort: far.port, direction: .inactive, payloadType: "0"))
        let received = await far.run { far -> [([UInt8], Int)] in
            (0..<4).compactMap { _ in
                far.receive(within: UDPTestPeer.arrivalGuard).map {
                    ($0.bytes, Int(UInt16(bigEndian: $0.from.sin_port)))
                }
            }
        }
        try #require(received.count == 4, "keep-alives heard: \(received.count)")
        #expect(received.allSatisfy { $0.1 == port }, "sent from the port we receive on")
        let headers = received.compactMap { RTPHeader($0.0) }
        #expect(headers.count == 4 && received.allSatisfy { $0.0.count == 12 })
        #expect(headers.allSatisfy { (96...127).contains($0.payloadType) && $0.payloadType != 0 })
        #expect(Set(headers.map(\.ssrc)).count == 1)
        #expect(zip(headers, headers.dropFirst()).allSatisfy { $1.sequence == $0.sequence &+ 1 })
        #expect(await session.keepAlivesSent >= 4)
        await session.close()
        let after = await far.run { far -> Int in
            var count = 0
            while far.receive(within: 0.8) != nil, count < 100 { count += 1 }
            return count
        }
        #expect(after <= 1, "at most one in flight at close, then silence: \(after)")
    }

    /// RFC 6263's 15 s on a ``ManualClock``: one keep-alive when the far end is negotiated, none
    /// 14 s later, the next at 15 s; the timer sleeps in between (one sleeper, no polling).
    @Test func theKeepAliveTimerRunsOnTheSessionsClock() async throws {
        let far = try UDPTestPeer()
        let clock = ManualClock()
        let session = RTPEchoSession(mode: .sink, clock: clock)
        _ = try await session.describe(localAddress: "127.0.0.1", direction: .sendrecv, answering: nil)
        try await session.negotiated(
            NegotiatedMedia(remoteAddress: "127.0.0.1", remotePort: far.port, direction: .sendonly))
        #expect(await far.run { $0.receive(within: UDPTestPeer.arrivalGuard) } != nil, "the first at once")
        await clock.waitForSleepers()
        clock.advance(by: .seconds(14))
        #expect(await far.run { $0.receive(within: 0.5) } == nil, "nothing before 15 s of silence")
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        #expect(await far.run { $0.receive(within: UDPTestPeer.arrivalGuard) } != nil, "the next at 15 s")
        #expect(await session.keepAlivesSent == 2)
        await session.close()
    }
}
