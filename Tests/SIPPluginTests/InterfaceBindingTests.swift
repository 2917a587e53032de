import NIOCore
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Which interface a flow's sockets are bound to (``InterfaceBinding``), as a rule over the path,
/// and that every socket of a flow really carries it (on loopback, index 1 in every namespace).
/// The namespace suite `CarrierLossSwitchFaultTests` proves what it is for: a REGISTER leaving
/// over cellular while Wi-Fi, without carrier, still holds the better route.
@Suite(.timeLimit(.minutes(1)))
struct InterfaceBindingTests {
    /// Wi-Fi (index 2) lost its carrier: the path holds cellular (index 3) only.
    static let cellularOnly = NetworkPath(
        status: .satisfied, primaryInterface: InterfaceRef(ifindex: 3, name: "cellular"),
        addresses: [
            InterfaceAddress(ifindex: 3, family: .ipv4, address: "198.18.2.2", prefixLength: 24),
            InterfaceAddress(ifindex: 3, family: .ipv6, address: "2001:db8:2::2", prefixLength: 64),
        ])

    /// Both links up, cellular primary (an interface switch): Wi-Fi's subnets are on-link.
    static let both = NetworkPath(
        status: .satisfied, primaryInterface: InterfaceRef(ifindex: 3, name: "cellular"),
        addresses: cellularOnly.addresses + [
            InterfaceAddress(ifindex: 2, family: .ipv4, address: "198.18.1.2", prefixLength: 24),
            InterfaceAddress(ifindex: 2, family: .ipv6, address: "2001:db8:1::2", prefixLength: 64),
        ])

    @Test(arguments: [
        ("198.18.2.2", "198.19.255.1", cellularOnly, Int32?(3)),
        ("2001:db8:2::2", "2001:db8:ffff::1", cellularOnly, 3),
        ("198.18.2.2", "198.18.2.1", both, 3),  // on-link on the chosen link itself
        ("198.18.2.2", "198.18.1.1", both, nil),  // on Wi-Fi's subnet: its connected route reaches it
        ("2001:db8:2::2", "2001:db8:1::1", both, nil),
        ("198.18.2.2", "127.0.0.1", cellularOnly, nil),  // this host, through loopback
        ("198.18.2.2", "::1", cellularOnly, nil),
        ("198.18.9.9", "198.19.255.1", cellularOnly, nil),  // not an address of the path
        ("198.18.2.2", "registrar.example", cellularOnly, nil),  // not an IP literal
        ("127.0.0.1", "127.0.0.1", loopbackPath(), 1),  // loopback to loopback stays on lo
    ])
    func aFlowIsBoundToTheInterfaceHoldingItsAddressUnlessAnotherRouteIsTheRightOne(
        local: String, target: String, path: NetworkPath, expected: Int32?
    ) {
        #expect(InterfaceBinding.choose(for: local, toward: target, in: path) == expected)
    }

    @Test(arguments: [
        ("198.18.0.2", 15, "198.19.255.1", true), ("198.18.1.2", 24, "198.18.2.1", false),
        ("198.18.1.2", 0, "203.0.113.9", true), ("2001:db8:1::2", 64, "2001:db8:1::ffff", true),
        ("2001:db8:1::2", 64, "2001:db8:2::1", false), ("198.18.1.2", 24, "2001:db8:1::2", false),
    ])
    func aSubnetHoldsExactlyTheAddressesUnderItsPrefix(address: String, length: Int, target: String, inside: Bool) {
        let family: AddressFamily = address.contains(":") ? .ipv6 : .ipv4
        let own = InterfaceAddress(ifindex: 2, family: family, address: address, prefixLength: UInt8(length))
        #expect(InterfaceBinding.subnet(of: own, contains: MediaTarget.bytes(of: target)!) == inside)
    }

    @Test func thisKernelBindsANewSocketToAnInterfaceWithoutPrivileges() {
        // Linux 5.7 and later: the machines this runs on. A failure here means flows fall back to the
        // kernel's routes (and say so once), which the namespace suite would catch as a lost switch.
        #expect(InterfaceBinding.isAvailable)
        #expect(InterfaceBinding.interface(holding: "127.0.0.1") == 1)
        #expect(InterfaceBinding.interface(holding: "198.51.100.77") == nil)
    }

    /// The shared UDP socket and its Contact twin, a TCP connection and its Contact listener: each
    /// is bound to the flow's interface (SO_BINDTOIFINDEX reads back), and the twin still shares
    /// the socket's port (Linux groups reuse-port sockets bound to the same interface only).
    @Test func everySocketOfAFlowIsBoundToItsInterface() async throws {
        let log = ThrottledLog(logger: testLogger("interface-binding"), clock: ContinuousClock())
        let hub = DatagramFlowHub(log: log)
        let registrar = try UDPTestPeer()
        let udp = try await SIPTransport.open(
            kind: .udp, localHost: "127.0.0.1", interface: 1,
            remote: try SocketAddress(ipAddress: "127.0.0.1", port: registrar.port), log: log, user: "alice",
            flows: hub, onLost: { _ in }, onPong: {}, inbound: { _, _ in })
        let twin = try #require(udp.sharedSocket?.listener, "the Contact twin opened")
        #expect(try await udp.channel.getOption(InterfaceBinding.option).get() == 1)
        #expect(try await twin.getOption(InterfaceBinding.option).get() == 1)
        #expect(twin.localAddress?.port == udp.localPort)
        let peer = try TCPTestPeer()
        let tcp = try await SIPTransport.open(
            kind: .tcp, localHost: "127.0.0.1", interface: 1,
            remote: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port), log: log, onLost: { _ in },
            onPong: {}, inbound: { _, _ in })
        let listener = try #require(tcp.listener, "the Contact listener opened")
        #expect(try await tcp.channel.getOption(InterfaceBinding.option).get() == 1)
        #expect(try await listener.channel.getOption(InterfaceBinding.option).get() == 1)
        #expect(listener.channel.localAddress?.port == tcp.localPort)
        let unbound = try await SIPTransport.open(
            kind: .tcp, localHost: "127.0.0.1", remote: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
            log: log, onLost: { _ in }, onPong: {}, listen: false, inbound: { _, _ in })
        #expect(try await unbound.channel.getOption(InterfaceBinding.option).get() == 0, "nil binds nothing")
        await udp.close()
        await tcp.close()
        await unbound.close()
    }
}
