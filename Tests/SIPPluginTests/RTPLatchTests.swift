import Testing

@testable import SIPPlugin

/// The media session's pure rules: which source is the far end (``RTPLatch``, symmetric RTP for
/// a far end behind a NAT) and when a silent stream sends a keep-alive (``RTPKeepAlive``, RFC 6263).
struct RTPLatchTests {
    static let signalled = RTPEndpoint(address: "198.51.100.7", port: 40_000)
    /// The far end's public mapping: its NAT changed the port.
    static let mapped = RTPEndpoint(address: "203.0.113.9", port: 61_002)
    static let stranger = RTPEndpoint(address: "203.0.113.66", port: 5_004)

    /// A PCMU packet's header fields.
    static func pcmu(_ sequence: UInt16, ssrc: UInt32 = 0xCAFE) -> RTPHeader {
        RTPHeader([0x80, 0, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0, 0] + bytes(ssrc))!
    }

    static func bytes(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    @Test func headersThatAreNotRTPAreRejected() {
        #expect(RTPHeader([0x80, 0, 0, 1]) == nil, "shorter than the fixed header")
        #expect(RTPHeader([0x40, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) == nil, "version 1")
        #expect(RTPHeader([0x81, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) == nil, "one CSRC announced, none there")
        #expect(RTPHeader([0x80, 0xC8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) == nil, "RTCP SR (200) is not RTP")
        let header = RTPHeader([0x80, 0x88, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0x01, 0x02])
        #expect(header == RTPHeader(payloadType: 8, sequence: 0x1234, ssrc: 0x0102), "marker bit masked")
    }

    @Test func theSignalledAddressIsTheFarEndAndConfirmsItAtItsFirstAuthenticPacket() {
        var latch = RTPLatch()
        #expect(latch.received(Self.pcmu(1), from: Self.signalled) == .stranger, "nothing negotiated yet")
        latch.negotiated(Self.signalled, payloadTypes: [0])
        #expect(latch.received(Self.pcmu(1), from: Self.signalled) == .farEnd(Self.signalled))
        #expect(latch.isConfirmed)
        // Confirmed: a source sending a perfect sequence later is still a stranger.
        for sequence in 2...10 {
            #expect(latch.received(Self.pcmu(UInt16(sequence), ssrc: 7), from: Self.mapped) == .stranger)
        }
        #expect(latch.latched == Self.signalled)
    }

    /// RFC 3550 A.1: "Source is not valid until MIN_SEQUENTIAL packets with sequential sequence
    /// numbers have been received" (MIN_SEQUENTIAL = 2): a far end whose NAT changed its port is
    /// latched at its second in-sequence packet, and from then on nobody else is.
    @Test func aFarEndBehindAPortChangingNATIsLatchedAfterTwoPacketsInSequence() {
        var latch = RTPLatch()
        latch.negotiated(Self.signalled, payloadTypes: [0])
        #expect(latch.received(Self.pcmu(100), from: Self.mapped) == .stranger, "one packet proves nothing")
        #expect(latch.received(Self.pcmu(101), from: Self.mapped) == .farEnd(Self.mapped))
        #expect(latch.latched == Self.mapped && latch.isConfirmed)
        #expect(latch.received(Self.pcmu(102), from: Self.mapped) == .farEnd(Self.mapped))
        #expect(latch.received(Self.pcmu(1), from: Self.stranger) == .stranger)
        #expect(latch.received(Self.pcmu(2), from: Self.stranger) == .stranger, "learning closed once latched")
        #expect(latch.received(Self.pcmu(5), from: Self.signalled) == .stranger, "nor does the SDP address win it back")
        latch.negotiated(Self.signalled, payloadTypes: [0])
        #expect(latch.latched == Self.signalled && !latch.isConfirmed, "a new negotiation starts over")
    }

    @Test func junkGapsOtherSSRCsAndUnnegotiatedPayloadTypesNeverLatch() {
        var latch = RTPLatch()
        latch.negotiated(Self.signalled, payloadTypes: [0])
        #expect(latch.received(nil, from: Self.stranger) == .stranger)
        #expect(latch.received(nil, from: Self.stranger) == .stranger, "not RTP twice")
        #expect(latch.received(Self.pcmu(1), from: Self.stranger) == .stranger)
        #expect(latch.received(Self.pcmu(3), from: Self.stranger) == .stranger, "a gap restarts the count")
        #expect(latch.received(Self.pcmu(4, ssrc: 9), from: Self.stranger) == .stranger, "another SSRC restarts it")
        let pcma = { (sequence: UInt16) in RTPHeader(payloadType: 8, sequence: sequence, ssrc: 0xCAFE) }
        #expect(latch.received(pcma(10), from: Self.mapped) == .stranger)
        #expect(latch.received(pcma(11), from: Self.mapped) == .stranger, "PCMA was not negotiated")
        #expect(latch.latched == Self.signalled && !latch.isConfirmed)
    }

    @Test func learningIsBoundedToSixtyFourAuthenticPacketsPerNegotiation() {
        var latch = RTPLatch()
        latch.negotiated(Self.signalled, payloadTypes: [0])
        // Authentic packets that never form a sequence (each from another port) use up learning.
        for index in 0..<RTPLatch.learningLimit {
            let source = RTPEndpoint(address: Self.stranger.address, port: 10_000 + index)
            #expect(latch.received(Self.pcmu(UInt16(index)), from: source) == .stranger)
        }
        #expect(latch.isConfirmed, "learning closed at the limit")
        #expect(latch.received(Self.pcmu(500), from: Self.mapped) == .stranger)
        #expect(latch.received(Self.pcmu(501), from: Self.mapped) == .stranger)
        #expect(latch.latched == Self.signalled, "the SDP's far end is still served")
        #expect(latch.received(Self.pcmu(7), from: Self.signalled) == .farEnd(Self.signalled))
    }

    @Test func aDeclinedStreamHasNoFarEnd() {
        var latch = RTPLatch()
        latch.negotiated(nil, payloadTypes: [0])
        #expect(latch.received(Self.pcmu(1), from: Self.signalled) == .stranger)
        #expect(latch.received(Self.pcmu(2), from: Self.signalled) == .stranger)
        #expect(latch.latched == nil)
    }
}

/// RFC 6263 keep-alive, on instants the test chooses.
struct RTPKeepAliveTests {
    static let start = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1_000)) }
    static let far = RTPEndpoint(address: "2001:db8:2::9", port: 40_002)

    /// RFC 6263 §4.6: "an RTP packet of 0 length with a dynamic payload type that has not been
    /// negotiated by the peers"; "The sequence number is incremented by one for each packet".
    @Test func aSilentStreamSendsAnEmptyPacketOfAnUnnegotiatedDynamicTypeEveryInterval() throws {
        var keepAlive = RTPKeepAlive(interval: .seconds(15), ssrc: 0x0102_0304, sequence: 0xFFFF)
        #expect(keepAlive.tick(at: Self.at(100)).isEmpty, "no target, nothing sent")
        #expect(keepAlive.nextDue == nil)
        let first = keepAlive.retarget(Self.far, negotiated: Set([0, 127]), at: Self.at(0))
        #expect(first.count == 1, "a new far end hears one at once")
        let packet = try #require(first.first)
        #expect(packet.target == Self.far)
        #expect(packet.bytes.count == 12, "a bare header: 0 bytes of payload")
        let header = try #require(RTPHeader(packet.bytes))
        #expect(header.payloadType == 126 && (96...127).contains(header.payloadType), "127 was negotiated")
        #expect(header.sequence == 0 && header.ssrc == 0x0102_0304, "sequence wraps from 0xFFFF")
        #expect(keepAlive.tick(at: Self.at(14.9)).isEmpty)
        let second = keepAlive.tick(at: Self.at(15))
        #expect(second.count == 1 && RTPHeader(second[0].bytes)?.sequence == 1)
        #expect(keepAlive.tick(at: Self.at(15.1)).isEmpty, "one per interval")
        #expect(keepAlive.nextDue == Self.at(30))
        #expect(keepAlive.sentCount == 2)
    }

    @Test func mediaWeSendPostponesTheKeepAliveAndEveryNegotiationGreetsTheFarEnd() {
        var keepAlive = RTPKeepAlive(interval: .seconds(15), ssrc: 1, sequence: 0)
        _ = keepAlive.retarget(Self.far, negotiated: [0], at: Self.at(0))
        keepAlive.mediaSent(at: Self.at(10))
        #expect(keepAlive.tick(at: Self.at(15)).isEmpty, "media went out 5 s ago")
        #expect(keepAlive.tick(at: Self.at(25)).count == 1)
        // A re-INVITE after a NAT rebinding keeps the far end, yet the relay must learn our new source.
        #expect(keepAlive.retarget(Self.far, negotiated: [0], at: Self.at(26)).first?.target == Self.far)
        let moved = RTPEndpoint(address: "198.51.100.7", port: 40_000)
        #expect(keepAlive.retarget(moved, negotiated: [0], at: Self.at(27)).first?.target == moved)
        #expect(keepAlive.retarget(nil, negotiated: [0], at: Self.at(28)).isEmpty)
        #expect(keepAlive.tick(at: Self.at(1_000)).isEmpty, "no far end: silent")
    }

    @Test func theIntervalIsClamped() {
        #expect(RTPKeepAlive(interval: .zero, ssrc: 1, sequence: 0).interval == .milliseconds(200))
        #expect(RTPKeepAlive(interval: .seconds(86_400), ssrc: 1, sequence: 0).interval == .seconds(300))
    }
}
