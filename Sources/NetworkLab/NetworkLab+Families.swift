import Foundation
import Glibc

/// Which address families a link's host end has: a Wi-Fi that is IPv4-only, a cellular link that
/// is IPv6-only, or both.
public enum LinkFamilies: String, Hashable, Sendable, CaseIterable {
    case dualStack = "dual-stack"
    case ipv4Only = "ipv4-only"
    case ipv6Only = "ipv6-only"

    var hasIPv4: Bool { self != .ipv6Only }
    var hasIPv6: Bool { self != .ipv4Only }
}

extension NetworkLab {
    /// Leaves `link`'s host end with the address families of `families` only: the wanted
    /// families' addresses and default routes are (re)installed first, then the other family's
    /// global addresses are removed, and with them every route through them (make before break:
    /// a client sees the new family before it loses the old one). Link-local IPv6 stays.
    public func setFamilies(_ link: LabLink, _ families: LinkFamilies) async throws {
        let p = plan(link)
        let a = p.addresses
        var lines: [String] = []
        if families.hasIPv4 {
            lines += [
                "address replace \(a.ipv4)/24 dev \(p.interface)",
                "route replace default via \(a.gateway4) dev \(p.interface) metric \(link.metric)",
            ]
        }
        if families.hasIPv6 {
            lines += [
                "address replace \(a.ipv6)/64 dev \(p.interface) nodad",
                "route replace ::/0 via \(a.gateway6) dev \(p.interface) metric \(link.metric)",
            ]
        }
        try await batch(p.hostNamespace, lines)
        if !families.hasIPv4 { try await ip(["-n", p.hostNamespace, "-4", "address", "flush", "dev", p.interface]) }
        if !families.hasIPv6 {
            try await ip(["-n", p.hostNamespace, "-6", "address", "flush", "dev", p.interface, "scope", "global"])
        }
        record("\(link) now \(families.rawValue)", backend: .iproute2)
    }

    /// Gives programs started in `host` a hosts file: each name resolves to its addresses (IP
    /// literals, in order). It is `/etc/netns/NAMESPACE/hosts`, which `ip netns exec` binds over
    /// `/etc/hosts` for every program the lab starts there; it goes with the lab (``shutdown()``,
    /// or the garbage collection of a dead owner).
    /// - Throws: ``NetworkLabError/Code/invalidRequest`` for a name that is not a host name or an
    ///   address that is not an IP literal (nothing is written then).
    public func setHostNames(in host: LabHost, _ names: KeyValuePairs<String, [String]>) throws {
        var lines: [String] = ["127.0.0.1 localhost", "::1 localhost"]
        for (name, addresses) in names {
            let allowed = name.utf8.allSatisfy { $0 < 0x80 && (isalnum(Int32($0)) != 0 || $0 == 45 || $0 == 46) }
            guard !name.isEmpty, name.utf8.count <= 253, allowed else {
                throw error(.invalidRequest, "\(LabText.quoted(name)) is not a host name")
            }
            for address in addresses.prefix(16) {
                var bytes = [UInt8](repeating: 0, count: 16)
                guard inet_pton(AF_INET, address, &bytes) == 1 || inet_pton(AF_INET6, address, &bytes) == 1 else {
                    throw error(.invalidRequest, "\(LabText.quoted(address)) is not an IP address")
                }
                lines.append("\(address) \(name)")
            }
        }
        let folder = LabOwnership.etcFolder(of: host.namespace)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try (lines.joined(separator: "\n") + "\n").write(toFile: folder + "/hosts", atomically: true, encoding: .utf8)
        record("host names in \(host): \(names.map(\.key).joined(separator: ", "))", backend: .iproute2)
    }
}

extension LabOwnership {
    /// The folder `ip netns exec` binds files from for `namespace`.
    static func etcFolder(of namespace: String) -> String { "/etc/netns/" + namespace }

    /// Removes the `/etc/netns` folders of lab namespaces whose owner `abandoned` says is gone.
    static func removeEtcFolders(where abandoned: (String) -> Bool) -> [String] {
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: "/etc/netns")) ?? []
        return folders.sorted().filter(abandoned).compactMap { folder in
            (try? FileManager.default.removeItem(atPath: etcFolder(of: folder))).map { etcFolder(of: folder) }
        }
    }
}
