internal import Glibc

/// Which addresses from DNS the resolver refuses to use as a server: a record naming the
/// unspecified address, loopback, multicast, the IPv4 broadcast address or one of this client's
/// own addresses would make the client send its REGISTERs (and credentials) to itself or to many
/// hosts at once, whatever the registrar's operator meant (RFC 3263 gives no such target a
/// meaning; RFC 6890 lists these ranges as not forwardable or not unicast).
///
/// A pure value. Invariants: an address that is not an IP literal is refused; an IPv4-mapped
/// IPv6 address is judged as its IPv4 address; `ownAddresses` compare by their parsed bytes.
struct ResolvedTargetCheck: Hashable, Sendable {
    /// Loopback allowed: only for tests whose servers are on loopback (found through a zone).
    var allowsLoopback = false
    /// This client's addresses (the path's, set when it changes).
    var ownAddresses: Set<String> = []

    /// Why `address` (from DNS) is refused, or nil when it may be used.
    func problem(with address: String) -> String? {
        guard let bytes = Self.bytes(of: address) else { return "not an IP address" }
        if ownAddresses.contains(where: { Self.bytes(of: $0) == bytes }) { return "this client's own address" }
        let v4 = bytes.count == 4 ? bytes : Self.mappedIPv4(bytes)
        if let v4 {
            switch v4[0] {
            case 0: return "unspecified"
            case 127: return allowsLoopback ? nil : "loopback"
            case 224...239: return "multicast"
            default: return v4 == [255, 255, 255, 255] ? "broadcast" : nil
            }
        }
        if bytes.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return allowsLoopback ? nil : "loopback" }
        if bytes[0] == 0xff { return "multicast" }
        return nil
    }

    /// The 4 or 16 bytes of an IP literal (brackets and an IPv6 zone allowed); nil for anything else.
    static func bytes(of address: String) -> [UInt8]? {
        var text = address.hasPrefix("[") && address.hasSuffix("]") ? String(address.dropFirst().dropLast()) : address
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        guard text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The IPv4 address inside `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2).
    private static func mappedIPv4(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else {
            return nil
        }
        return Array(bytes[12..<16])
    }
}

extension ResolvedTargetCheck {
    /// Loopback allowed, for tests whose servers listen on loopback and are found through a zone.
    static let allowingLoopback = ResolvedTargetCheck(allowsLoopback: true)
}
