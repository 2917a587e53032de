import Foundation
import Glibc

extension NetworkLab {
    /// Plays ``Fault/deadPath(_:for:)``: a table `netlab_<owner pid>_<n>` in the `netdev` family
    /// at each end of `link`, whose ingress chain drops every frame but ARP and IPv6 neighbour
    /// discovery, waits, then deletes both (also when the wait is cancelled or the second end
    /// failed). Dropping where frames arrive, not where they leave, keeps the sender's kernel
    /// unaware (no `EPERM` as an output drop would give, no neighbour failure, no ICMP).
    ///
    /// Invariant: while it holds, nothing crosses the link either way except neighbour
    /// resolution; before it returns, both tables are gone (they live in the lab's namespaces,
    /// so a killed lab's go with them, `netres lab gc`).
    func withDeadPath(_ link: LabLink, for duration: Duration, fault: Fault) async throws {
        guard let nft = LabCommand.nft else { throw error(.unsupported, "nftables (`nft`) is not installed") }
        guard let ip = LabCommand.ip else { throw error(.unsupported, "iproute2 (`ip`) is not installed") }
        nftSerial += 1
        let table = "netlab_\(getpid())_\(nftSerial)"
        let p = plan(link)
        let ends = [
            (namespace: p.hostNamespace, device: p.interface),
            (namespace: link.peer.namespace, device: p.peerInterface),
        ]
        var installed: [String] = []
        func removeTables() async throws {
            for namespace in installed {
                try await LabCommand.run(
                    [ip, "netns", "exec", namespace, nft, "delete", "table", "netdev", table], seed: seed)
            }
        }
        do {
            for end in ends {
                try await LabCommand.run(
                    [ip, "netns", "exec", end.namespace, nft, "-f", "-"],
                    input: Self.deadPathTable(table, device: end.device), seed: seed)
                installed.append(end.namespace)
            }
            record("nft table \(table) (netdev ingress) on \(p.interface) and \(p.peerInterface)", backend: .nftables)
            try await pause(duration)
        } catch {
            try? await removeTables()
            throw error
        }
        record("\(fault): restoring", backend: .nftables)
        try await removeTables()
    }

    /// The nftables script of one end of a dead path: an ingress chain on `device` whose policy
    /// drops, accepting only ARP and IPv6 neighbour solicitations and advertisements.
    static func deadPathTable(_ table: String, device: String) -> String {
        """
        table netdev \(table) {
          chain dead {
            type filter hook ingress device \(LabText.quoted(device)) priority -500; policy drop;
            ether type arp accept
            icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept
          }
        }

        """
    }
}
