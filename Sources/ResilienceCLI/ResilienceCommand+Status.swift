import ArgumentParser
import NetlinkMonitor
import ResilienceCore
import ResilienceOutput

extension ResilienceCommand {
    /// Prints the current path once. Exit status 0 when satisfied, 1 when not.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the current network path; exit 0 when satisfied, 1 when not."
        )

        @OptionGroup var monitor: MonitorOptions
        @Flag(help: "Print one JSON object.") var json = false

        func run() async throws {
            let logger = monitor.makeLogger()
            let netlink = try await monitor.startMonitor(logger: logger)
            let path = netlink.currentPath()
            let snapshot = netlink.snapshot()
            await netlink.shutdown()
            print(json ? PathReport(path, snapshot).json : PathReport(path, snapshot).human)
            if !path.isSatisfied { throw ExitCode(1) }
        }
    }
}

/// The current path with the facts behind it, for `status` and `wait-online`.
struct PathReport {
    var path: NetworkPath
    var snapshot: NetworkSnapshot

    init(_ path: NetworkPath, _ snapshot: NetworkSnapshot) {
        self.path = path
        self.snapshot = snapshot
    }

    var reason: String? {
        if case .unsatisfied(let why) = path.status { return why.rawValue }
        return nil
    }

    var json: String {
        let links = snapshot.links.values.sorted { $0.ifindex < $1.ifindex }.map { link in
            JSONValue.object(
                JSONObject([
                    ("ifindex", .int(Int64(link.ifindex))),
                    ("name", .string(link.name)),
                    ("admin_up", .bool(link.isAdminUp)),
                    ("carrier", .string(link.carrier.rawValue)),
                    ("operstate", .string(link.operState.description)),
                    ("addresses", .array(snapshot.addresses(of: link.ifindex).map { .string($0.description) })),
                ]))
        }
        return JSONObject([
            ("status", .string(path.statusWord)),
            ("reason", reason.map(JSONValue.string) ?? .null),
            ("iface", path.primaryInterface.map { .string($0.name) } ?? .null),
            ("ifindex", path.primaryInterface.map { .int(Int64($0.ifindex)) } ?? .null),
            ("addresses", .array(path.addresses.map { .string($0.description) })),
            ("default_routes", .array(path.defaultRoutes.map { .string(describe($0)) })),
            ("links", .array(links)),
        ]).rendered
    }

    /// `default via 192.0.2.1 dev eth0 metric 0`, naming the interface as `ip route` does.
    func describe(_ route: DefaultRoute) -> String {
        let device = snapshot.links[route.ifindex]?.name ?? "#\(route.ifindex)"
        return "default" + (route.gateway.map { " via \($0)" } ?? "") + " dev \(device) metric \(route.metric)"
    }

    var human: String {
        var lines = [
            path.isSatisfied ? "satisfied via \(path.primaryInterface?.name ?? "?")" : "unsatisfied: \(reason ?? "?")"
        ]
        for address in path.addresses { lines.append("  address \(address)") }
        for route in path.defaultRoutes { lines.append("  \(describe(route))") }
        for link in snapshot.links.values.sorted(by: { $0.ifindex < $1.ifindex }) {
            lines.append(
                "  link \(link.name)#\(link.ifindex) \(link.isAdminUp ? "up" : "down") \(link.carrier.rawValue)")
        }
        return lines.joined(separator: "\n")
    }
}
