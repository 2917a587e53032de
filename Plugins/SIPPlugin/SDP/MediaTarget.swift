internal import Glibc

/// Where a far end may ask us to send media: a pure check of its `c=` address and `m=` port,
/// so a hostile offer cannot turn the media session into a relay towards this host, a whole
/// subnet or a multicast group.
///
/// Refused (RFC 3264 §6 lets an answerer refuse an offer it cannot accept; the call answers 488):
/// - an address that is not an IP literal (nothing here resolves names);
/// - unspecified (`0.0.0.0/8`, `::`), broadcast and reserved (`240.0.0.0/4`, which holds
///   `255.255.255.255`) and multicast (`224.0.0.0/4`, `ff00::/8`); an IPv4-mapped IPv6 address
///   is judged as the IPv4 address it carries;
/// - loopback (`127.0.0.0/8`, `::1`), unless our own address is loopback too: then the far end
///   is on this host and its loopback is where it listens;
/// - a port from 1 to 1023 (the well-known services an echo must never reach); port 0 is a
///   declined stream and never checked.
public enum MediaTarget {
    /// Why media must not go to `address`:`port`, or nil when it may; `localAddress` is the
    /// address our side of the call uses.
    public static func problem(address: String, port: Int, localAddress: String?) -> String? {
        guard port != 0 else { return nil }
        guard (1024...65535).contains(port) else { return "port \(port) is not an RTP port (1024 to 65535)" }
        guard let bytes = Self.bytes(of: address) else { return "\(address.prefix(64)) is not an IP address" }
        let sameHost = localAddress.flatMap(Self.bytes(of:)).map(Self.isLoopback) ?? false
        if Self.isLoopback(bytes), !sameHost { return "\(address) is a loopback address" }
        if let why = Self.unroutable(bytes) { return "\(address) is \(why)" }
        return nil
    }

    /// The address as 4 (IPv4) or 16 (IPv6) bytes; nil for anything that is not an IP literal.
    static func bytes(of address: String) -> [UInt8]? {
        guard address.utf8.count <= 64 else { return nil }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, address, &v4) == 1 { return v4 }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return nil }
        // ::ffff:a.b.c.d carries an IPv4 address: judge that one.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    static func isLoopback(_ bytes: [UInt8]) -> Bool {
        bytes.count == 4 ? bytes[0] == 127 : bytes == Array(repeating: 0, count: 15) + [1]
    }

    /// Why an address (not loopback) can never be a far end's media port, or nil.
    static func unroutable(_ bytes: [UInt8]) -> String? {
        if bytes.count == 4 {
            switch bytes[0] {
            case 0: return "unspecified"
            case 224...239: return "multicast"
            case 240...255: return "broadcast or reserved"
            default: return nil
            }
        }
        if bytes.allSatisfy({ $0 == 0 }) { return "unspecified" }
        if bytes[0] == 0xFF { return "multicast" }
        return nil
    }
}

extension SessionDescription {
    /// Why this description's media may not be sent to (the first stream it keeps whose target
    /// ``MediaTarget`` refuses, or one kept without any `c=`), or nil when every kept stream may.
    public func mediaTargetProblem(localAddress: String?) -> String? {
        for index in media.indices where media[index].port != 0 {
            guard let connection = connection(ofMedia: index) else { return "stream \(index + 1) has no c= address" }
            if let why = MediaTarget.problem(
                address: connection.address, port: media[index].port, localAddress: localAddress)
            {
                return "stream \(index + 1): \(why)"
            }
        }
        return nil
    }
}
