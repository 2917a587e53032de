import Foundation
import Glibc

extension NetworkLab {
    /// Brings the host end up and reinstalls its default routes (the kernel drops them on link-down).
    func bringUp(_ link: LabLink) async throws {
        let p = plan(link)
        try await batch(p.hostNamespace, ["link set \(p.interface) up"] + p.routeLines)
    }

    /// Sets the peer end down or up: the host end loses or regains carrier while staying admin-up.
    func setPeer(_ link: LabLink, up: Bool) async throws {
        let p = plan(link)
        try await batch(link.peer.namespace, ["link set \(p.peerInterface) \(up ? "up" : "down")"])
    }

    /// Moves the host end to a new host octet in 3…254 (seeded, never the current one).
    func changeAddress(_ link: LabLink, order: AddressChangeOrder) async throws {
        var p = plan(link)
        let old = p.hostAddressLines.map { $0.replacingOccurrences(of: "address add", with: "address del") }
            .map { $0.replacingOccurrences(of: " nodad", with: "") }
        var octet = p.hostOctet
        while octet == p.hostOctet { octet = Int.random(in: 3...254, using: &random) }
        p.hostOctet = octet
        plans[link.id] = p
        let new = p.hostAddressLines
        let lines = order == .makeBeforeBreak ? new + old : old + new
        try await batch(p.hostNamespace, lines + p.routeLines)
        record("\(link) now \(p.addresses.ipv4) and \(p.addresses.ipv6)", backend: .iproute2)
    }

    /// Moves both ends to a subnet in 100…250 (seeded, unused by any link); routes follow.
    func renumber(_ link: LabLink) async throws {
        var p = plan(link)
        let oldHost = p.hostAddressLines.map { $0.replacingOccurrences(of: "address add", with: "address del") }
            .map { $0.replacingOccurrences(of: " nodad", with: "") }
        let oldPeer = p.peerAddressLines.map { $0.replacingOccurrences(of: "address add", with: "address del") }
            .map { $0.replacingOccurrences(of: " nodad", with: "") }
        let used = Set(plans.values.map(\.subnet))
        let free = (100...250).filter { !used.contains($0) }
        guard let subnet = free.randomElement(using: &random) else { throw error(.invalidRequest, "no subnet left") }
        p.subnet = subnet
        plans[link.id] = p
        try await batch(link.peer.namespace, p.peerAddressLines + oldPeer)
        try await batch(p.hostNamespace, p.hostAddressLines + oldHost + p.routeLines)
        record("\(link) renumbered to \(p.addresses.ipv4)/24 and \(p.addresses.ipv6)/64", backend: .iproute2)
    }

    /// Adds default routes through `to` with metric 1 (so it becomes the primary), waits, removes them.
    func switchPrimary(from: LabLink, to: LabLink, for duration: Duration) async throws {
        let p = plan(to)
        let a = p.addresses
        let add = [
            "route add default via \(a.gateway4) dev \(p.interface) metric 1",
            "route add ::/0 via \(a.gateway6) dev \(p.interface) metric 1",
        ]
        try await batch(p.hostNamespace, add)
        do { try await pause(duration) } catch {
            try? await batch(p.hostNamespace, add.map { $0.replacingOccurrences(of: "route add", with: "route del") })
            throw error
        }
        try await batch(p.hostNamespace, add.map { $0.replacingOccurrences(of: "route add", with: "route del") })
        record("primary back from \(to) to \(from)", backend: .iproute2)
    }

    /// Renames the host end (down, rename, up, routes back).
    func rename(_ link: LabLink, to name: String) async throws {
        var p = plan(link)
        try await batch(
            p.hostNamespace,
            ["link set \(p.interface) down", "link set \(p.interface) name \(name)", "link set \(name) up"])
        p.interface = name
        plans[link.id] = p
        try await batch(p.hostNamespace, p.routeLines)
    }

    /// Moves the host end to `namespace`; in the link's own host it gets its addresses and routes back.
    func move(_ link: LabLink, to namespace: String) async throws {
        var p = plan(link)
        try await ip(["-n", p.hostNamespace, "link", "set", p.interface, "netns", namespace])
        p.hostNamespace = namespace
        plans[link.id] = p
        if namespace == link.host.namespace {
            try await batch(namespace, p.hostAddressLines + ["link set \(p.interface) up"] + p.routeLines)
        }
    }

    /// Plays a flap schedule through the peer end (carrier), each cycle timed by the task's sleep.
    func flap(_ link: LabLink, _ schedule: FlapSchedule) async throws {
        let down = schedule.period * schedule.dutyCycle
        let up = schedule.period - down
        do {
            for _ in 0..<schedule.count {
                try await setPeer(link, up: false)
                try await pause(down)
                try await setPeer(link, up: true)
                try await pause(up)
            }
        } catch {
            try? await setPeer(link, up: true)
            throw error
        }
        try await batch(plan(link).hostNamespace, plan(link).routeLines)
    }

    /// Installs a table `netlab_<owner pid>_<n>` with output and input rules in the link's host,
    /// waits, and deletes it (also when the wait is cancelled).
    func withNftRules(_ link: LabLink, output: [String], input: [String], for duration: Duration) async throws {
        guard let nft = LabCommand.nft else { throw error(.unsupported, "nftables (`nft`) is not installed") }
        guard let ip = LabCommand.ip else { throw error(.unsupported, "iproute2 (`ip`) is not installed") }
        nftSerial += 1
        let table = "netlab_\(getpid())_\(nftSerial)"
        let namespace = plan(link).hostNamespace
        let script = """
            table inet \(table) {
              chain out {
                type filter hook output priority 0; policy accept;
                \(output.joined(separator: "\n    "))
              }
              chain in {
                type filter hook input priority 0; policy accept;
                \(input.joined(separator: "\n    "))
              }
            }

            """
        let exec = [ip, "netns", "exec", namespace, nft]
        try await LabCommand.run(exec + ["-f", "-"], input: script, seed: seed)
        record("nft table \(table) in \(namespace)", backend: .nftables)
        do { try await pause(duration) } catch {
            _ = try? await LabCommand.run(exec + ["delete", "table", "inet", table], seed: seed)
            throw error
        }
        try await LabCommand.run(exec + ["delete", "table", "inet", table], seed: seed)
    }

    /// Installs a root qdisc on the host end, waits, and deletes it (also when the wait is cancelled).
    func withQdisc(_ link: LabLink, _ qdisc: [String], for duration: Duration) async throws {
        guard let tc = LabCommand.tc else { throw error(.unsupported, "`tc` (iproute2) is not installed") }
        let p = plan(link)
        let base = [tc, "-n", p.hostNamespace, "qdisc"]
        try await LabCommand.run(base + ["add", "dev", p.interface, "root"] + qdisc, seed: seed)
        do { try await pause(duration) } catch {
            _ = try? await LabCommand.run(base + ["del", "dev", p.interface, "root"], seed: seed)
            throw error
        }
        try await LabCommand.run(base + ["del", "dev", p.interface, "root"], seed: seed)
    }
}
