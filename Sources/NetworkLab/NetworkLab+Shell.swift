import Glibc

extension NetworkLab {
    /// Runs `ip` commands in `host`, one per element (e.g. `link set wifi down`), in one process
    /// (`ip -n NS -batch -`): for steps no ``Fault`` covers, such as a second link's own routes, or a
    /// change that must happen exactly now and stay until the test undoes it.
    ///
    /// The commands act only inside the lab's namespaces; everything they make dies with the lab.
    public func ip(in host: LabHost, _ commands: [String]) async throws {
        guard hosts.contains(host) else { throw error(.invalidRequest, "host \(host) belongs to another lab") }
        guard !commands.isEmpty, commands.count <= 100_000 else {
            throw error(.invalidRequest, "1 to 100,000 ip commands at once")
        }
        try await batch(host.namespace, commands)
    }
}

extension NetworkLab {
    /// Takes `link`'s host end admin-down now and leaves it so (the kernel drops its routes), for a
    /// test that acts between the steps of a fault; ``linkUp(_:)`` undoes it.
    public func linkDown(_ link: LabLink) async throws {
        let p = plan(link)
        try await batch(p.hostNamespace, ["link set \(p.interface) down"])
    }

    /// Brings `link`'s host end up with its default routes back (as ``Fault/adminDown(_:for:)`` does
    /// at its end), in one `ip -batch`.
    public func linkUp(_ link: LabLink) async throws { try await bringUp(link) }
}

/// CLOCK_REALTIME in seconds: the clock of ``RegistrarRequest/at`` (Kamailio's `$TV(Sn)`), so a test
/// can take an instant before a fault and select the requests the registrar saw after it.
public func realtime() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
