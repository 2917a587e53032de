import Foundation
import Glibc
import NetworkLab

/// Plays a ``LabScenario``: hosts `client` and `server`, the links, the registrar, the command in
/// `client`, the timeline; then prints what happened, faults and the registrar's view, in time order.
///
/// Invariants: the lab is shut down on every path; the command runs at most the scenario's duration
/// (then SIGTERM, SIGKILL after 3 s); timeline steps start at their instants, concurrently; the
/// timeline is printed and the command's status returned whichever ends first, the command or
/// the timeline (steps not yet played when the command ends are cancelled and not played).
struct LabPlayer {
    var scenario: LabScenario
    var command: [String]

    /// Runs the scenario; the command's exit status (0 when it was stopped at the end of the duration).
    func play() async throws -> Int32 {
        let lab = try NetworkLab(seed: scenario.seed)
        // Written at once, unbuffered: a run killed mid-way still shows its seed.
        FileHandle.standardOutput.write(
            Data(
                "netres lab: seed \(lab.seed) (replay with NETWORKLAB_SEED=\(lab.seed) or seed: in the scenario)\n".utf8
            ))
        do {
            let status = try await playIn(lab)
            await lab.shutdown()
            return status
        } catch {
            await lab.shutdown()
            throw error
        }
    }

    private func playIn(_ lab: NetworkLab) async throws -> Int32 {
        let startedAt = realtime()
        let client = try await lab.addHost("client")
        let server = try await lab.addHost("server")
        var made: [String: LabLink] = [:]
        for link in scenario.links {
            made[link.name] = try await lab.connect(client, to: server, as: link.name, metric: link.metric)
        }
        let links = made
        let registrar =
            scenario.registrar
            ? try await lab.startRegistrar(in: server, options: LabClientSide.registrarOptions(push: scenario.push))
            : nil
        let side = LabClientSide(
            client: client, server: server, registrar: registrar, controlSocket: scenario.controlSocket)
        let pushService = scenario.push ? try await side.startPushService(lab) : nil
        let elsewhere = scenario.steps.contains { $0.kind == .move } ? try await lab.addHost("elsewhere") : nil
        let environment = ProcessInfo.processInfo.environment.merging([
            "NETLAB_REGISTRAR": LabAddress.service4,
            "NETLAB_INTERFACES": scenario.links.map(\.name).joined(separator: ","),
            "NETLAB_SEED": "\(lab.seed)",
        ]) { $1 }
        let pid = try await lab.spawn(in: client, command, output: nil, environment: environment)
        let status: Int32
        do {
            status = try await play(
                scenario.steps, lab: lab, links: links, pid: pid, side: side, elsewhere: elsewhere)
        } catch {
            // A step the lab could not play: what happened until then is still shown.
            await printTimeline(lab: lab, registrar: registrar, push: pushService, startedAt: startedAt)
            throw error
        }
        await printTimeline(lab: lab, registrar: registrar, push: pushService, startedAt: startedAt)
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return code
    }

    /// Plays the steps while the command runs; the command's raw wait status, or 0 when the
    /// scenario's duration stopped it.
    private func play(
        _ steps: [LabStep], lab: NetworkLab, links: [String: LabLink], pid: pid_t, side: LabClientSide,
        elsewhere: LabHost?
    ) async throws -> Int32 {
        let first = links[scenario.links[0].name]!
        return try await withThrowingTaskGroup(of: Int32?.self) { group in
            for (index, step) in steps.enumerated() {
                group.addTask {
                    // A step still waiting (or playing) when the command ends is cancelled: that
                    // ends the step, never the report.
                    do {
                        try await Task.sleep(for: step.at)
                        try await play(
                            step, index: index, lab: lab, link: step.link.flatMap { links[$0] } ?? first,
                            links: links, side: side, elsewhere: elsewhere)
                    } catch  where Task.isCancelled {
                        return nil
                    }
                    return nil
                }
            }
            group.addTask {
                let deadline = ContinuousClock.now + scenario.duration
                while ContinuousClock.now < deadline {
                    if let status = await lab.exitStatus(of: pid) { return status }
                    try await Task.sleep(for: .milliseconds(50))
                }
                await lab.stop(pid)
                return 0
            }
            var status: Int32 = 0
            for try await result in group {
                if let result {
                    status = result
                    group.cancelAll()
                }
            }
            return status
        }
    }

    private func play(
        _ step: LabStep, index: Int, lab: NetworkLab, link: LabLink, links: [String: LabLink], side: LabClientSide,
        elsewhere: LabHost?
    ) async throws {
        switch step.kind {
        case .appState, .pushToken, .call, .message:
            try await side.play(step, index: index, lab: lab)
        case .registrarRestart, .registrar503, .registrarDropOK, .registrar481:
            guard let registrar = side.registrar else {
                throw NetworkLabError(
                    .invalidRequest, "\(step.text): the scenario has no registrar: true", seed: lab.seed)
            }
            switch step.kind {
            case .registrarRestart: try await registrar.restart()
            case .registrar503:
                try await registrar.inject(.serviceUnavailable(retryAfter: step.percent, count: step.count))
            case .registrarDropOK: try await registrar.inject(.dropNextRegisterOK)
            default: try await registrar.inject(.reject481NextInDialog)
            }
        default:
            if let fault = fault(step, link: link, links: links, elsewhere: elsewhere) { try await lab.inject(fault) }
        }
    }

    /// The link fault a step plays; nil for the steps that act on the registrar or the client.
    private func fault(_ step: LabStep, link: LabLink, links: [String: LabLink], elsewhere: LabHost?) -> Fault? {
        switch step.kind {
        case .adminDown: .adminDown(link, for: step.duration)
        case .carrierLoss: .carrierLoss(link, for: step.duration)
        case .addressChange: .addressChange(link, step.order)
        case .renumber: .renumber(link)
        case .defaultRouteLoss: .defaultRouteLoss(link, for: step.duration)
        case .interfaceSwitch: .interfaceSwitch(from: link, to: links[step.target] ?? link, for: step.duration)
        case .linkRecreate: .linkRecreate(link, after: step.duration)
        case .rename: .rename(link, to: step.target, for: step.duration)
        case .move: .moveToHost(link, elsewhere ?? link.peer, for: step.duration)
        case .flap: .flap(link, FlapSchedule(count: step.count, period: step.period, dutyCycle: step.dutyCycle))
        case .packetLoss: .packetLoss(link, percent: step.percent, for: step.duration)
        case .partition: .partition(link, step.direction, for: step.duration)
        case .deadPath: .deadPath(link, for: step.duration)
        case .rateLimit: .rateLimit(link, bitsPerSecond: step.rate, for: step.duration)
        case .delay: .delay(link, delay: step.period, jitter: step.jitter, for: step.duration)
        case .netlinkOverrun: .netlinkOverrun(link, changes: step.count)
        case .registrarRestart, .registrar503, .registrarDropOK, .registrar481, .appState, .pushToken, .call, .message:
            nil
        }
    }

    /// Prints the lab's events, the registrar's requests and the push service's pushes, merged by
    /// time since the lab started.
    private func printTimeline(lab: NetworkLab, registrar: LabRegistrar?, push: LabPushService?, startedAt: Double)
        async
    {
        // One clock for every line (CLOCK_REALTIME, the registrar's), so a request shows on the
        // right side of the step it raced.
        var lines: [(Double, String)] = await lab.events().map { event in
            (event.realtime - startedAt, "\(event.what) [\(event.backend)]")
        }
        for request in registrar?.requests() ?? [] {
            let what = request.fields.sorted { $0.key < $1.key }.filter { $0.key != "at" }
                .map { "\($0.key)=\($0.value.prefix(80))" }.joined(separator: " ")
            lines.append((request.at - startedAt, "registrar: \(request.kind) \(what)"))
        }
        let delivered = push?.delivered ?? []
        for request in push?.requests ?? [] {
            let fate = request.lost ? "lost (seeded)" : delivered.contains(request) ? "delivered" : "not delivered"
            lines.append((request.at - startedAt, "push service: \(request.kind) push for \(request.account): \(fate)"))
        }
        print("netres lab: timeline")
        for (at, what) in lines.sorted(by: { $0.0 < $1.0 }) {
            print(
                String(format: "%+9.3fs  ", at)
                    + what.unicodeScalars.map { $0.isASCII && $0.value >= 32 ? String($0) : "?" }.joined())
        }
        if let registrar, let bindings = try? await registrar.bindings() {
            print("netres lab: registrar bindings at the end: \(bindings.count)")
            for binding in bindings { print("  \(binding.addressOfRecord) -> \(binding.contact)") }
        }
    }
}
