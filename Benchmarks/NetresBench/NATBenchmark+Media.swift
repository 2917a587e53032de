import Foundation
import NetworkLab

/// The media half of the `nat` bench's rebinding rounds: one call kept up across all rounds.
///
/// netres calls a sipp far end beside the registrar (``CallRecoveryBenchmark/farEndScenario``:
/// it answers every re-INVITE and plays 7 s of RTP after each ACK) through Kamailio and rtpengine
/// (``RegistrarOptions/mediaRelay``); netres echoes what it receives. The witness is the lab's
/// nftables counter (``NetworkLab/countDatagrams(in:toPort:from:)``) of the datagrams the relay
/// delivers to sipp's media port: netres's echo of sipp's RTP, or netres's own RTP keep-alive
/// (SIPPlugin's `RTPKeepAlive`, after 15 s of silence), neither of which arrives while the rebinding has
/// cut netres's media mapping and the relay has not learnt the new one.
///
/// Invariants: every wait is bounded (15 s for quiet media, 30 s per round); the lab removes the
/// counter, sipp and the call with its namespaces.
struct NATMediaProbe {
    let counter: LabDatagramCounter
    let far: LabSIPp

    /// Starts the far end and the counter, places the call from account `nat` with `netres ctl
    /// call` over `socket`, and waits (≤ 15 s) until the echo reaches the far end.
    static func start(lab: NetworkLab, network: ClientAndRegistrar, netres: String, socket: String) async throws
        -> NATMediaProbe
    {
        let scenario = lab.directory + "/nat-far.xml"
        try CallRecoveryBenchmark.farEndScenario.write(toFile: scenario, atomically: true, encoding: .utf8)
        let registrar = network.registrar
        let far = try await lab.startSIPp(
            in: network.server, scenario: scenario, address: registrar.address, port: 5070, mediaPort: 16_000,
            timeout: NetworkLab.longestFault)
        let counter = try await lab.countDatagrams(in: network.server, toPort: far.mediaPort, from: registrar.address)
        let reply = try await lab.run(
            in: network.client, [netres, "ctl", "--socket", socket, "call", "nat", far.uri()])
        guard await eventually(within: .seconds(15), { !far.received("ACK").isEmpty }) else {
            throw BenchError("nat: no call up: ctl said \(reply); sipp: \(far.diagnostics())")
        }
        let flowing = await eventually(within: .seconds(15)) { ((try? await counter.packets()) ?? 0) > 20 }
        guard flowing else { throw BenchError("nat: no media through the relay at the far end; see \(lab.directory)") }
        return NATMediaProbe(counter: counter, far: far)
    }

    /// Waits (≤ 15 s) until no datagram has arrived for 500 ms: the previous RTP burst is over,
    /// so growth after a rebinding is media restored, not a datagram already in flight.
    func waitForQuiet() async throws {
        var last = try await counter.packets()
        var quietSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline, ContinuousClock.now - quietSince < .milliseconds(500) {
            try await Task.sleep(for: .milliseconds(50))
            let now = try await counter.packets()
            if now != last { (last, quietSince) = (now, ContinuousClock.now) }
        }
    }

    /// The counter now: the floor a round's growth is measured from.
    func packets() async throws -> Int { try await counter.packets() }

    /// Polls (every 10 ms, ≤ 30 s) until the counter has passed `floor`; the CLOCK_REALTIME
    /// second it was seen, or nil when it never was.
    func restored(past floor: Int) async -> Double? {
        var seen: Double?
        _ = await eventually(within: .seconds(30), every: .milliseconds(10)) {
            guard ((try? await counter.packets()) ?? floor) > floor else { return false }
            seen = realtime()
            return true
        }
        return seen
    }
}
