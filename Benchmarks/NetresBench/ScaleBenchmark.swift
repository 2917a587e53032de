import Foundation
import NetworkLab

/// `netres-bench scale N[,N…] [idle=S] [rates=R,R…] [ceiling=C]`: `netres run` with N UDP accounts on one
/// registrar (``SIPLab``), beside sipp registering the same number of users at its best rate and
/// beside baresip and two bare Swift programs at rest, all in the same run.
///
/// For each N: sipp's floor (every rate in `rates`; the fastest complete run is the floor), then
/// `netres run` in the background app state: start-up to all bound, RSS and CPU per account,
/// open descriptors, wake-ups over an idle window with no refresh due and over one holding the
/// refresh of every account, then one link flap (down 3 s) to the last 200 OK, and the datagrams
/// the registrar's socket dropped in each phase.
///
/// Invariants: every wait is bounded (start-up and recovery by `60 s + N / 20 s`); every process
/// the lab started is stopped and both hosts deleted at the end (``SIPLab/with(tls:_:)``).
struct ScaleBenchmark {
    var counts: [Int]
    var idleSeconds = 60
    var sippRates = [500, 1000, 2000, 4000]
    /// netres's `register-rate-ceiling` (REGISTERs per second to one registrar); `nil` keeps the
    /// daemon's default.
    var registerRateCeiling: Int?
    /// Registration lifetime of netres's accounts: the refresh (at 30 s before expiry) falls in
    /// the second idle window.
    let expires = 120

    struct Phase {
        var seconds: Double?
        var drops = 0
        var requests = 0
    }

    func run() async throws {
        try await SIPLab.with { lab, _ in try await run(lab) }
    }

    private func run(_ lab: SIPLab) async throws {
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let bench = bin.appendingPathComponent("netres-bench").path
        let baseline = try Spawned([bench, "idle-baseline"])
        let quiet = try Spawned([bench, "idle-baseline", "quiet"])
        defer {
            for child in [baseline, quiet] { child.stop() }
        }
        let peerStart = realtime()
        let baresip = try await lab.startBaresip(user: "peer")
        try await waitFor(seconds: 10) { lab.registrarLog().contains { $0.kind == "REGISTERED" && $0.at > peerStart } }
        print("## Scale: N accounts on one registrar (`netres-bench scale`)\n")
        for count in counts {
            let floor = try await sippFloor(lab, count: count)
            try await measureNetres(
                lab, count: count, netres: bin.appendingPathComponent("netres").path, floor: floor
            ) {
                IdleMeter.measure([$0, baseline.pid, quiet.pid, baresip], seconds: idleSeconds)
            }
        }
    }

    // MARK: sipp

    /// sipp registers `count` fresh users (challenge, then authenticated) at each rate; returns
    /// the fastest run in which every user got its 200 OK.
    private func sippFloor(_ lab: SIPLab, count: Int) async throws -> Phase {
        let dir = lab.directory
        try SIPRecoveryBenchmark.sippScenario.write(toFile: dir + "/register.xml", atomically: true, encoding: .utf8)
        var best: Phase?
        print("### sipp registering \(count) users (the floor)\n")
        print("| rate (REGISTER/s asked) | first REGISTER → last 200 OK | users bound | dropped at the registrar |")
        print("|---|---|---|---|")
        for rate in sippRates {
            let prefix = "s\(count)r\(rate)u"
            let users = (0..<count).map {
                "\(prefix)\($0);[authentication username=\(prefix)\($0) password=secret-\(prefix)\($0)]"
            }
            try ("SEQUENTIAL\n" + users.joined(separator: "\n") + "\n")
                .write(toFile: dir + "/users.csv", atomically: true, encoding: .utf8)
            let dropsBefore = try await lab.registrarDrops()
            let sipp = try await lab.start(
                in: lab.client,
                [
                    "/usr/bin/sipp", "\(lab.registrarAddress):\(lab.port)", "-sf", dir + "/register.xml", "-inf",
                    dir + "/users.csv", "-i", lab.initial.ipv4, "-p", "5070", "-m", "\(count)", "-r", "\(rate)",
                    "-l", "\(count)", "-nostdin", "-timeout", "60s", "-timeout_error",
                ], output: dir + "/sipp-\(count)-\(rate).log")
            // sipp ends itself within its own 60 s timeout; the bound is a hang guard.
            _ = try await lab.waitForExit(sipp, within: .seconds(90))
            let drops = try await lab.registrarDrops() - dropsBefore
            let phase = span(lab.registrarLog(), prefix: prefix, count: count, drops: drops)
            print(row(rate: rate, phase, count: count))
            if phase.requests == count, let seconds = phase.seconds, seconds < best?.seconds ?? .infinity {
                best = phase
            }
        }
        print("")
        return best ?? Phase()
    }

    /// First REGISTER of a user with `prefix` → last REGISTERED of one, and how many users got one.
    func span(_ log: [RegistrarRequest], prefix: String, count: Int, after: Double = 0, drops: Int) -> Phase {
        let lines = log.filter { $0.user.hasPrefix(prefix) && $0.at > after }
        let bound = lines.filter { $0.kind == "REGISTERED" }
        let first = lines.first { $0.kind == "REGISTER" }?.at
        let last = bound.map(\.at).max()
        let seconds = first.flatMap { first in last.map { $0 - first } }
        return Phase(seconds: seconds, drops: drops, requests: Set(bound.map(\.user)).count)
    }

    private func row(rate: Int, _ phase: Phase, count: Int) -> String {
        "| \(rate) | \(phase.seconds.map { format3($0) + " s" } ?? "—") | \(phase.requests)/\(count) | \(phase.drops) |"
    }
}

func format3(_ value: Double) -> String { String(format: "%.3f", value) }
