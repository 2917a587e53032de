import ResilienceCore
import Testing

@testable import NetlinkMonitor

struct RouteMessageDecoderTests {
    func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { MessageBuilder.le(value) }

    @Test func aLinkMessageCarriesNameFlagsOperstateAndCarrierChanges() {
        let builder = MessageBuilder.link(index: 7, flags: 0x11043, name: "veth0", operState: 6, carrierChanges: 3)
        let expected = LinkState(ifindex: 7, name: "veth0", flags: 0x11043, operState: .up, carrierChanges: 3)
        #expect(builder.decoded() == [.newLink(expected)])
        #expect(expected.carrier == .carrier)
    }

    @Test func aDeletedLinkIsDecodedAsSuch() {
        let builder = MessageBuilder.link(type: 17, index: 7, flags: 0, name: "gone", operState: 2)
        #expect(builder.decoded() == [.deletedLink(LinkState(ifindex: 7, name: "gone", flags: 0, operState: .down))])
    }

    @Test func ipv4AddressesPreferLocalAndReadExtendedFlags() {
        var builder = MessageBuilder()
        let header: [UInt8] = [2, 24, 0x80, 0] + le(Int32(4))
        builder.message(
            type: 20, header: header,
            attributes: [(1, [198, 18, 9, 9]), (2, [198, 18, 0, 2]), (8, le(UInt32(0x280)))])
        let expected = InterfaceAddress(
            ifindex: 4, family: .ipv4, address: "198.18.0.2", prefixLength: 24, scope: 0, flags: 0x280)
        #expect(builder.decoded() == [.newAddress(expected)])
    }

    @Test func ipv6AddressesAreCanonicalAndTentativeIsKept() {
        var builder = MessageBuilder()
        let address: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [2]
        builder.message(type: 21, header: [10, 64, 0x40, 0] + le(Int32(5)), attributes: [(1, address)])
        let decoded = builder.decoded()
        #expect(decoded.count == 1)
        guard case .deletedAddress(let a) = decoded.first else { return }
        #expect(a.address == "2001:db8::2")
        #expect(a.isTentative)
        #expect(!a.isUsable)
    }

    @Test func onlyMainTableUnicastDefaultRoutesAreKept() {
        var builder = MessageBuilder()
        let main: [UInt8] = [2, 0, 0, 0, 254, 4, 0, 1] + le(UInt32(0))
        let attributes: [(UInt16, [UInt8])] = [(4, le(Int32(3))), (5, [198, 18, 0, 1]), (6, le(UInt32(100)))]
        builder.message(type: 24, flags: 0x100, header: main, attributes: attributes)
        builder.message(type: 24, header: [2, 24, 0, 0, 254, 4, 0, 1] + le(UInt32(0)), attributes: attributes)
        builder.message(type: 24, header: [2, 0, 0, 0, 255, 4, 0, 1] + le(UInt32(0)), attributes: attributes)
        builder.message(
            type: 25, header: [2, 0, 0, 0, 252, 4, 0, 1] + le(UInt32(0)),
            attributes: [(15, le(UInt32(254)))] + attributes)
        let route = DefaultRoute(family: .ipv4, ifindex: 3, gateway: "198.18.0.1", metric: 100)
        #expect(builder.decoded() == [.newRoute([route], replace: true), .ignored, .ignored, .deletedRoute([route])])
    }

    /// `ip route add default nexthop via 198.18.1.1 dev #4 nexthop via 198.18.2.1 dev #5`: one
    /// route per next hop, sharing the metric; a truncated next hop ends the list, not the decoder.
    @Test func anECMPRouteIsOneDefaultRoutePerNextHop() {
        func hop(_ ifindex: Int32, _ gateway: [UInt8]) -> [UInt8] {
            le(UInt16(16)) + [0, 0] + le(ifindex) + le(UInt16(8)) + le(UInt16(5)) + gateway
        }
        var builder = MessageBuilder()
        let header: [UInt8] = [2, 0, 0, 0, 254, 4, 0, 1] + le(UInt32(0))
        let hops = hop(4, [198, 18, 1, 1]) + hop(5, [198, 18, 2, 1])
        builder.message(type: 24, header: header, attributes: [(6, le(UInt32(20))), (9, hops)])
        builder.message(type: 24, header: header, attributes: [(9, hop(4, [198, 18, 1, 1]) + [12, 0, 0])])
        builder.message(type: 25, header: header, attributes: [(9, Array(hops.prefix(6)))])
        let first = DefaultRoute(family: .ipv4, ifindex: 4, gateway: "198.18.1.1", metric: 20)
        let second = DefaultRoute(family: .ipv4, ifindex: 5, gateway: "198.18.2.1", metric: 20)
        var firstAtZero = first
        firstAtZero.metric = 0
        #expect(
            builder.decoded() == [
                .newRoute([first, second], replace: false), .newRoute([firstAtZero], replace: false), .ignored,
            ])
    }

    @Test func doneErrorsAndTruncatedInputAreSafe() {
        var builder = MessageBuilder()
        builder.message(type: 3, header: le(Int32(0)), attributes: [])
        builder.message(type: 2, header: le(Int32(-105)), attributes: [])
        #expect(builder.decoded() == [.done, .error(-105)])
        let truncated = Array(builder.bytes.dropLast(3))
        #expect(truncated.withUnsafeBytes { RouteMessageDecoder.decode($0).map(\.message) } == [.done])
        let link = MessageBuilder.link(index: 1, flags: 0, name: "x", operState: 0).bytes
        #expect(Array(link.prefix(20)).withUnsafeBytes { RouteMessageDecoder.decode($0) }.isEmpty)
    }
}
