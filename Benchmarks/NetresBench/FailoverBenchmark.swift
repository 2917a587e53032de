import Foundation
import NetworkLab

/// `netres-bench failover [rounds] [accounts]`: the time from a primary registrar's death to every
/// account bound on the backup, beside what a registration costs at the backup.
///
/// NetworkLab's ``ClientAndRegistrars`` (dnsmasq with NAPTR/SRV for `lab.test`, a primary and a
/// backup Kamailio); one `netres run` with `accounts` accounts, half UDP and half TCP, flow pings
/// every 2 s. Each round kills the primary (SIGKILL), measures until every account is bound at the
/// backup (its request log), then starts the primary and waits until they are all back.
///
/// The floor is the registration round trip at the backup: from an account's first REGISTER
/// there to its binding (the challenge and the answered REGISTER), the least a failover costs
/// after the death is noticed. UDP notices at the next flow ping (up to 2 s: ICMP port
/// unreachable), TCP at once (the connection resets).
struct FailoverBenchmark {
    var rounds = 3
    var accounts = 100

    func run() async throws {
        let netres = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("netres").path
        try await withNetworkLab { network in
            let lab = try await network.addClientAndRegistrars()
            let users = (0..<accounts).map { $0 % 2 == 0 ? "bu\($0)" : "bt\($0)" }
            let config = try lab.writeDaemonConfig(
                name: "netres-failover", accounts: users.map { ($0, $0.hasPrefix("bu") ? "udp" : "tcp") }, flowPing: 2)
            try await network.spawn(
                in: lab.client, [netres, "run", "--config", config], output: network.directory + "/netres.log")
            guard await Self.allBound(users, at: lab.primary, after: 0, within: 60) else {
                throw NetworkLabError(.timedOut, "not every account bound at the primary", seed: network.seed)
            }
            var failovers: [Duration] = []
            var floors: [Duration] = []
            for _ in 0..<rounds {
                try await Task.sleep(for: .seconds(3))
                let killedAt = realtime()
                await lab.killPrimary()
                guard await Self.allBound(users, at: lab.backup, after: killedAt, within: 60) else {
                    throw NetworkLabError(.timedOut, "not every account moved to the backup", seed: network.seed)
                }
                let requests = lab.backup.requests().filter { $0.at > killedAt }
                let bound = Dictionary(grouping: requests.filter { $0.kind == "REGISTERED" }, by: \.user)
                    .mapValues { $0.map(\.at).min()! }
                failovers.append(.seconds(bound.values.max()! - killedAt))
                for (user, at) in bound {
                    if let first = requests.first(where: { $0.kind == "REGISTER" && $0.user == user }) {
                        floors.append(.seconds(at - first.at))
                    }
                }
                let restartedAt = realtime()
                try await lab.primary.start()
                guard await Self.allBound(users, at: lab.primary, after: restartedAt, within: 60) else {
                    throw NetworkLabError(.timedOut, "not every account returned to the primary", seed: network.seed)
                }
            }
            let failover = LatencyStats(failovers)
            let floor = LatencyStats(floors)
            print(
                "### Failover: primary killed → every account bound at the backup (\(accounts) accounts, \(rounds) rounds)\n"
            )
            print("| measure | n | p50 (ms) | p99 (ms) | max (ms) |")
            print("|---|---|---|---|---|")
            print(
                "| registration round trip at the backup (floor, per account) | \(floor.count) | \(format1(floor.p50 / 1000)) | \(format1(floor.p99 / 1000)) | \(format1(floor.max / 1000)) |"
            )
            print(
                "| kill → last account bound at the backup | \(failover.count) | \(format1(failover.p50 / 1000)) | \(format1(failover.p99 / 1000)) | \(format1(failover.max / 1000)) |"
            )
        }
    }

    static func allBound(_ users: [String], at registrar: LabRegistrar, after instant: Double, within seconds: Double)
        async -> Bool
    {
        await eventually(within: .seconds(seconds)) {
            Set(registrar.requests().filter { $0.kind == "REGISTERED" && $0.at > instant }.map(\.user)).count
                >= users.count
        }
    }
}
