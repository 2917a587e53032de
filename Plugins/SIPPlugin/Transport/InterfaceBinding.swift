internal import Glibc
internal import Logging
internal import NIOCore
internal import NIOPosix
internal import ResilienceCore
internal import Synchronization

/// A flow's sockets leave over the link the path chose, not over whatever route the kernel
/// prefers.
///
/// The path picks its primary link among the usable ones (carrier, address, default route). The
/// kernel routes by every route it holds, and keeps a link's routes when its carrier goes (flagged
/// `linkdown`; `net.ipv4.conf.*.ignore_routes_with_linkdown` is 0 by default). So with Wi-Fi
/// (metric 100) carrier-less beside a healthy cellular link (metric 200), the path moves to
/// cellular, but a socket bound only to the cellular address still leaves by Wi-Fi's route and
/// is lost until the carrier returns. A socket bound to the interface as well (Linux
/// `SO_BINDTOIFINDEX`, set before `bind` and `connect`) is routed by that interface's routes
/// only, and receives only what arrives on it.
///
/// Invariants:
/// - A socket is bound to an interface once, when it is made: Linux (5.7 and later) lets any
///   process do that without privileges; only a change of a bound socket needs `CAP_NET_RAW`, and
///   no socket here is ever changed (a flow for another link is a new socket).
/// - Where the kernel refuses (older kernels, which also want `CAP_NET_RAW` for the first
///   binding), sockets are bound to the address only, as before, and a notice says so once
///   (``isAvailable``): nothing fails for it.
/// - The kernel's own choice is kept where the path's is not the better one: toward a loopback
///   address from an address that is not (the host itself: loopback, not the link, reaches it),
///   and toward an address on the subnet of another link of the path (its connected route, not
///   a default route, reaches it).
enum InterfaceBinding {
    /// `SO_BINDTOIFINDEX` (62 on every Linux architecture, since Linux 5.0), which NIO does not name.
    static let option = ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: 62))

    /// Whether this kernel lets this process bind a new socket to an interface: tried once, on
    /// a socket of its own bound to loopback (index 1 in every network namespace).
    static let isAvailable: Bool = {
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        var loopback: Int32 = 1
        return setsockopt(probe, SOL_SOCKET, 62, &loopback, socklen_t(MemoryLayout<Int32>.size)) == 0
    }()

    /// The interface a flow from `local` toward `remote` is bound to, on `path`; nil leaves the
    /// route to the kernel (see the invariants above), or when binding is not available here.
    static func interface(for local: String, toward remote: SocketAddress, in path: NetworkPath) -> Int32? {
        guard isAvailable, let target = remote.ipAddress else { return nil }
        return choose(for: local, toward: target, in: path)
    }

    /// The pure rule behind ``interface(for:toward:in:)``: the interface holding `local` on
    /// `path`, unless `target` is not an IP literal, is loopback while `local` is not, or is on
    /// the subnet of another of the path's links; nil when `local` is not on the path.
    static func choose(for local: String, toward target: String, in path: NetworkPath) -> Int32? {
        guard let owner = path.addresses.first(where: { $0.address == local }),
            let bytes = MediaTarget.bytes(of: target), !leavesByLoopback(toward: bytes, from: local)
        else { return nil }
        let onLinkElsewhere = path.addresses.contains { address in
            address.ifindex != owner.ifindex && Self.subnet(of: address, contains: bytes)
        }
        return onLinkElsewhere ? nil : owner.ifindex
    }

    /// The interface for a socket of `flow`'s own toward `remote` (a dialog's remote target):
    /// the flow's, unless the rule above leaves that route to the kernel (`remote` is loopback
    /// while the flow's address is not, or not an IP literal).
    static func interface(of flow: SIPTransport, toward remote: SocketAddress) -> Int32? {
        guard let target = remote.ipAddress.flatMap(MediaTarget.bytes(of:)),
            !leavesByLoopback(toward: target, from: flow.localHost)
        else { return nil }
        return flow.interface
    }

    /// Whether a datagram from `local` to `target` (its bytes) goes to this host through loopback
    /// rather than out of `local`'s link: `target` is loopback and `local` is not.
    private static func leavesByLoopback(toward target: [UInt8], from local: String) -> Bool {
        MediaTarget.isLoopback(target) && MediaTarget.bytes(of: local).map(MediaTarget.isLoopback) != true
    }

    /// Whether `bytes` (4 or 16) lie in the subnet of `address` (its prefix length).
    static func subnet(of address: InterfaceAddress, contains bytes: [UInt8]) -> Bool {
        guard let network = MediaTarget.bytes(of: address.address), network.count == bytes.count else { return false }
        var bits = min(Int(address.prefixLength), bytes.count * 8)
        for index in bytes.indices where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            guard network[index] & mask == bytes[index] & mask else { return false }
            bits -= 8
        }
        return true
    }

    /// The index of the interface holding `address` now (asked of the kernel, `getifaddrs`); nil
    /// when none holds it, or binding is not available. For sockets made without a path at
    /// hand (a call's media), bound to the address the call's signalling uses.
    static func interface(holding address: String) -> Int32? {
        guard isAvailable, let wanted = MediaTarget.bytes(of: address) else { return nil }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        var visited = 0
        while let current = entry, visited < 10_000 {
            visited += 1
            entry = current.pointee.ifa_next
            guard let socketAddress = current.pointee.ifa_addr, let name = current.pointee.ifa_name,
                Self.bytes(of: socketAddress) == wanted
            else { continue }
            let index = if_nametoindex(name)
            return index == 0 ? nil : Int32(bitPattern: index)
        }
        return nil
    }

    /// The address bytes of an IPv4 or IPv6 `sockaddr` (its numeric text, read back as
    /// ``MediaTarget/bytes(of:)`` reads it); nil for any other family.
    private static func bytes(of socketAddress: UnsafeMutablePointer<sockaddr>) -> [UInt8]? {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        // The length of the largest family asked for: getnameinfo reads only what the family has.
        let length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        guard getnameinfo(socketAddress, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        let numeric = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A link-local IPv6 address reads back with its scope (`fe80::1%wifi`).
        return MediaTarget.bytes(of: String(numeric.prefix { $0 != "%" }))
    }

    private static let unavailableNoted = Atomic<Bool>(false)

    /// Says once, at the first flow, when sockets cannot be bound to interfaces here.
    static func noteIfUnavailable(_ logger: Logger) {
        guard !isAvailable,
            unavailableNoted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return }
        logger.notice(
            "sip.interface-binding-unavailable",
            metadata: [
                "reason": "the kernel refused SO_BINDTOIFINDEX (Linux 5.7 or later binds without privileges)",
                "effect": "flows follow the kernel's routes, also those of a link without carrier",
            ])
    }
}

extension ClientBootstrap {
    /// Binds the connection to `interface` before its `bind` and `connect` (``InterfaceBinding``);
    /// nil changes nothing.
    func bound(toInterface interface: Int32?) -> ClientBootstrap {
        guard let interface else { return self }
        return channelOption(InterfaceBinding.option, value: Int(interface))
    }
}

extension DatagramBootstrap {
    /// Binds the socket to `interface` before its `bind` (``InterfaceBinding``); nil changes nothing.
    func bound(toInterface interface: Int32?) -> DatagramBootstrap {
        guard let interface else { return self }
        return channelOption(InterfaceBinding.option, value: Int(interface))
    }
}

extension ServerBootstrap {
    /// Binds the listening socket to `interface` before its `bind` (``InterfaceBinding``); the
    /// connections it accepts inherit it. Nil changes nothing.
    func bound(toInterface interface: Int32?) -> ServerBootstrap {
        guard let interface else { return self }
        return serverChannelOption(InterfaceBinding.option, value: Int(interface))
    }
}
