import Glibc
import ResilienceCore

/// One rtnetlink message, decoded into plain Swift at once. Pure: no libnl, no syscalls, so the
/// decoder is tested with literal bytes.
enum RouteMessage: Hashable, Sendable {
    case newLink(LinkState)
    case deletedLink(LinkState)
    case newAddress(InterfaceAddress)
    case deletedAddress(InterfaceAddress)
    /// A main-table default route, one element per next hop (an ECMP route has several, never
    /// none); `replace` is `NLM_F_REPLACE` (it supersedes the routes with the same family and
    /// metric).
    case newRoute([DefaultRoute], replace: Bool)
    case deletedRoute([DefaultRoute])
    /// End of a dump.
    case done
    /// `NLMSG_ERROR` with a negative errno (0 is an ACK).
    case error(Int32)
    /// Anything else: other tables, non-default routes, unknown families, malformed input.
    case ignored
}

/// Wire constants from `<linux/netlink.h>` and `<linux/rtnetlink.h>`, written out so the decoder
/// needs no C. They are ABI and never change.
enum Wire {
    static let nlmsgError: UInt16 = 2
    static let nlmsgDone: UInt16 = 3
    static let rtmNewLink: UInt16 = 16
    static let rtmDelLink: UInt16 = 17
    static let rtmNewAddr: UInt16 = 20
    static let rtmDelAddr: UInt16 = 21
    static let rtmNewRoute: UInt16 = 24
    static let rtmDelRoute: UInt16 = 25
    static let flagMulti: UInt16 = 0x2
    static let flagDumpInterrupted: UInt16 = 0x10
    static let flagReplace: UInt16 = 0x100
    static let afInet: UInt8 = 2
    static let afInet6: UInt8 = 10
    static let headerSize = 16
    static let mainTable: UInt32 = 254
    static let unicastRoute: UInt8 = 1
    // Attributes.
    static let iflaIfname: UInt16 = 3
    static let iflaOperstate: UInt16 = 16
    static let iflaCarrierChanges: UInt16 = 35
    static let ifaAddress: UInt16 = 1
    static let ifaLocal: UInt16 = 2
    static let ifaFlags: UInt16 = 8
    static let rtaOif: UInt16 = 4
    static let rtaGateway: UInt16 = 5
    static let rtaPriority: UInt16 = 6
    static let rtaMultipath: UInt16 = 9
    static let rtaTable: UInt16 = 15
}

/// Splits a datagram into messages and decodes each one.
enum RouteMessageDecoder {
    /// A message as framed on the wire: its header fields and the decoded body.
    struct Framed: Hashable, Sendable {
        var type: UInt16
        var flags: UInt16
        var message: RouteMessage
    }

    /// Decodes every `nlmsghdr` in `bytes`; stops at the first malformed length.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> [Framed] {
        var out: [Framed] = []
        var offset = 0
        while offset + Wire.headerSize <= bytes.count {
            let length = Int(bytes.load(fromByteOffset: offset, as: UInt32.self))
            guard length >= Wire.headerSize, offset + length <= bytes.count else { break }
            let type = bytes.load(fromByteOffset: offset + 4, as: UInt16.self)
            let flags = bytes.load(fromByteOffset: offset + 6, as: UInt16.self)
            let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + Wire.headerSize)..<(offset + length)])
            out.append(Framed(type: type, flags: flags, message: decode(type: type, flags: flags, body: body)))
            offset += align(length)
        }
        return out
    }

    static func decode(type: UInt16, flags: UInt16, body: UnsafeRawBufferPointer) -> RouteMessage {
        switch type {
        case Wire.nlmsgDone: return .done
        case Wire.nlmsgError: return body.count >= 4 ? .error(body.loadUnaligned(as: Int32.self)) : .ignored
        case Wire.rtmNewLink, Wire.rtmDelLink:
            guard let link = link(body) else { return .ignored }
            return type == Wire.rtmNewLink ? .newLink(link) : .deletedLink(link)
        case Wire.rtmNewAddr, Wire.rtmDelAddr:
            guard let address = address(body) else { return .ignored }
            return type == Wire.rtmNewAddr ? .newAddress(address) : .deletedAddress(address)
        case Wire.rtmNewRoute, Wire.rtmDelRoute:
            let routes = routes(body)
            guard !routes.isEmpty else { return .ignored }
            return type == Wire.rtmNewRoute
                ? .newRoute(routes, replace: flags & Wire.flagReplace != 0) : .deletedRoute(routes)
        default: return .ignored
        }
    }

    /// `struct ifinfomsg` (16 bytes) then attributes.
    static func link(_ body: UnsafeRawBufferPointer) -> LinkState? {
        guard body.count >= 16 else { return nil }
        let index = body.loadUnaligned(fromByteOffset: 4, as: Int32.self)
        let flags = body.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        var link = LinkState(ifindex: index, name: "", flags: flags, operState: .unknown)
        attributes(body, from: 16) { type, value in
            switch type {
            case Wire.iflaIfname: link.name = string(value)
            case Wire.iflaOperstate where value.count >= 1: link.operState = OperState(rawValue: value[0])
            case Wire.iflaCarrierChanges where value.count >= 4:
                link.carrierChanges = value.loadUnaligned(as: UInt32.self)
            default: break
            }
        }
        return link
    }

    /// `struct ifaddrmsg` (8 bytes) then attributes. IPv4 uses `IFA_LOCAL` (IFA_ADDRESS is the
    /// peer on point-to-point links); IPv6 has only `IFA_ADDRESS`.
    static func address(_ body: UnsafeRawBufferPointer) -> InterfaceAddress? {
        guard body.count >= 8, let family = family(body[0]) else { return nil }
        var flags = UInt32(body[2])
        var local: String?
        var peer: String?
        attributes(body, from: 8) { type, value in
            switch type {
            case Wire.ifaLocal: local = text(value, family)
            case Wire.ifaAddress: peer = text(value, family)
            case Wire.ifaFlags where value.count >= 4: flags = value.loadUnaligned(as: UInt32.self)
            default: break
            }
        }
        guard let address = local ?? peer else { return nil }
        return InterfaceAddress(
            ifindex: body.loadUnaligned(fromByteOffset: 4, as: Int32.self), family: family, address: address,
            prefixLength: body[1], scope: body[3], flags: flags)
    }

    /// `struct rtmsg` (12 bytes) then attributes; only unicast main-table routes with `dst_len` 0.
    /// A single-path route names its interface in `RTA_OIF`; an ECMP route lists its next hops in
    /// `RTA_MULTIPATH` (`struct rtnexthop`, 8 bytes, then the hop's own attributes), one
    /// ``DefaultRoute`` each. Empty for anything else.
    static func routes(_ body: UnsafeRawBufferPointer) -> [DefaultRoute] {
        guard body.count >= 12, let family = family(body[0]), body[1] == 0, body[7] == Wire.unicastRoute else {
            return []
        }
        var table = UInt32(body[4])
        var oif: Int32?
        var gateway: String?
        var metric: UInt32 = 0
        var hops: [(ifindex: Int32, gateway: String?)] = []
        attributes(body, from: 12) { type, value in
            switch type {
            case Wire.rtaTable where value.count >= 4: table = value.loadUnaligned(as: UInt32.self)
            case Wire.rtaOif where value.count >= 4: oif = value.loadUnaligned(as: Int32.self)
            case Wire.rtaGateway: gateway = text(value, family)
            case Wire.rtaPriority where value.count >= 4: metric = value.loadUnaligned(as: UInt32.self)
            case Wire.rtaMultipath: hops = nextHops(value, family)
            default: break
            }
        }
        guard table == Wire.mainTable else { return [] }
        if let oif { hops = [(oif, gateway)] }
        return hops.map {
            DefaultRoute(family: family, ifindex: $0.ifindex, gateway: $0.gateway, metric: metric, table: table)
        }
    }

    /// The `struct rtnexthop` records of `RTA_MULTIPATH`; stops at the first malformed length.
    static func nextHops(_ value: UnsafeRawBufferPointer, _ family: AddressFamily) -> [(
        ifindex: Int32, gateway: String?
    )] {
        var hops: [(Int32, String?)] = []
        var offset = 0
        while offset + 8 <= value.count {
            let length = Int(value.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            guard length >= 8, offset + length <= value.count else { break }
            let hop = UnsafeRawBufferPointer(rebasing: value[offset..<(offset + length)])
            var gateway: String?
            attributes(hop, from: 8) { type, attribute in
                if type == Wire.rtaGateway { gateway = text(attribute, family) }
            }
            hops.append((hop.loadUnaligned(fromByteOffset: 4, as: Int32.self), gateway))
            offset += align(length)
        }
        return hops
    }

    /// Walks `struct rtattr` records (2-byte length, 2-byte type, 4-byte aligned).
    static func attributes(
        _ body: UnsafeRawBufferPointer, from start: Int, _ visit: (UInt16, UnsafeRawBufferPointer) -> Void
    ) {
        var offset = start
        while offset + 4 <= body.count {
            let length = Int(body.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            guard length >= 4, offset + length <= body.count else { return }
            let type = body.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 0x3FFF  // drop NLA_F_*
            visit(type, UnsafeRawBufferPointer(rebasing: body[(offset + 4)..<(offset + length)]))
            offset += align(length)
        }
    }

    static func align(_ length: Int) -> Int { (length + 3) & ~3 }

    static func family(_ raw: UInt8) -> AddressFamily? {
        switch raw {
        case Wire.afInet: .ipv4
        case Wire.afInet6: .ipv6
        default: nil
        }
    }

    static func string(_ value: UnsafeRawBufferPointer) -> String {
        let bytes = value.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Textual address by `inet_ntop` (RFC 5952 form for IPv6).
    static func text(_ value: UnsafeRawBufferPointer, _ family: AddressFamily) -> String? {
        let (af, size) = family == .ipv4 ? (AF_INET, 4) : (AF_INET6, 16)
        guard value.count >= size, let base = value.baseAddress else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(af, base, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
