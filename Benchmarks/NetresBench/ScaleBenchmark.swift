import Foundation

/// `netres-bench scale N[,N…] [idle=S] [rates=R,R…]`: `netres run` with N UDP accounts on one
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
/// is stopped by PID and both namespaces deleted at the end (``SIPLab/tearDown()``).
struct ScaleBenchmark {
    var counts: [Int]
    var idleSeconds = 60
    var sippRates = [500, 1000, 2000, 4000]
    /// Registration lifetime of netres's accounts: the refresh (at 30 s before expiry) falls in
    /// the second idle window.
    let expires = 120

    struct Phase {
        var seconds: Double?
        var drops = 0
        var requests = 0
    }

    func run() throws {
        let lab = try SIPLab()
        defer { lab.tearDown() }
        try lab.startKamailio()
        let bin = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let bench = bin.appendingPathComponent("netres-bench").path
        let baseline = try Spawned([bench, "idle-baseline"])
        let quiet = try Spawned([bench, "idle-baseline", "quiet"])
        defer {
            for child in [baseline, quiet] { child.stop() }
        }
        let peerStart = realtimeNow()
        let baresip = try lab.startBaresip(user: "peer")
        try waitFor(seconds: 10) { lab.registrarLog().contains { $0.kind == "REGISTERED" && $0.realtime > peerStart } }
        print("## Scale: N accounts on one registrar (`netres-bench scale`)\n")
        for count in counts {
            let floor = try sippFloor(lab, count: count)
            try measureNetres(lab, count: count, netres: bin.appendingPathComponent("netres").path, floor: floor) {
                IdleMeter.measure([$0, baseline.pid, quiet.pid, baresip.pid], seconds: idleSeconds)
            }
        }
    }

    // MARK: sipp

    /// sipp registers `count` fresh users (challenge, then authenticated) at each rate; returns
    /// the fastest run in which every user got its 200 OK.
    private func sippFloor(_ lab: SIPLab, count: Int) throws -> Phase {
        let dir = lab.directory.path
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
            let dropsBefore = try lab.registrarDrops()
            let sipp = try lab.start(
                in: lab.clientNamespace,
                [
                    "/usr/bin/sipp", "\(SIPLab.registrarAddress):\(SIPLab.port)", "-sf", dir + "/register.xml", "-inf",
                    dir + "/users.csv", "-i", SIPLab.clientAddress, "-p", "5070", "-m", "\(count)", "-r", "\(rate)",
                    "-l", "\(count)", "-nostdin", "-timeout", "60s", "-timeout_error",
                ], output: dir + "/sipp-\(count)-\(rate).log")
            _ = try sipp.wait()
            lab.stop(sipp)
            let phase = span(
                lab.registrarLog(), prefix: prefix, count: count, drops: try lab.registrarDrops() - dropsBefore)
            print(row(rate: rate, phase, count: count))
            if phase.requests == count, let seconds = phase.seconds, seconds < best?.seconds ?? .infinity {
                best = phase
            }
        }
        print("")
        return best ?? Phase()
    }

    /// First REGISTER of a user with `prefix` → last REGISTERED of one, and how many users got one.
    func span(_ log: [SIPLab.LogLine], prefix: String, count: Int, after: Double = 0, drops: Int) -> Phase {
        let lines = log.filter { $0.user.hasPrefix(prefix) && $0.realtime > after }
        let bound = lines.filter { $0.kind == "REGISTERED" }
        let first = lines.first { $0.kind == "REGISTER" }?.realtime
        let last = bound.map(\.realtime).max()
        let seconds = first.flatMap { first in last.map { $0 - first } }
        return Phase(seconds: seconds, drops: drops, requests: Set(bound.map(\.user)).count)
    }

    private func row(rate: Int, _ phase: Phase, count: Int) -> String {
        "| \(rate) | \(phase.seconds.map { format3($0) + " s" } ?? "—") | \(phase.requests)/\(count) | \(phase.drops) |"
    }
}

func format3(_ value: Double) -> String { String(format: "%.3f", value) }
