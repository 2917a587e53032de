import Foundation
import Logging
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Synchronization
import Testing

@testable import SIPPlugin

/// The re-REGISTER after a NAT rebinding (SIPUserAgent+NAT) against a scripted registrar that
/// plays the NAT (``NATRegistrarPeer``), on a ManualClock: one REGISTER per distinct rebinding,
/// however many keep-alives see it and whatever the registrar then reports.
@Suite(.timeLimit(.minutes(3)))
struct NATRebindingPeerTests {
    /// An agent on the plugin's shared UDP socket (the NAT check needs one), logging into `records`.
    static func agent(port: Int, records: LogRecords) -> SIPUserAgent {
        let account = SIPAccount(
            name: "nat", registrarHost: "127.0.0.1", registrarPort: port, transport: .udp, user: "nat",
            domain: "127.0.0.1", password: "secret", expires: 300, flowPing: .every(.seconds(30)))
        let logger = Logger(label: "nat") { _ in RecordingLogHandler(records) }
        return SIPUserAgent(
            account: account, timers: SIPTimers(), logger: logger, clock: ManualClock(),
            pacer: RegistrarPacer(settings: .init()), callSurvivalBudget: .seconds(30),
            flows: DatagramFlowHub(log: ThrottledLog(logger: logger, clock: ContinuousClock())), directory: nil,
            onFlowLost: { _ in }, onFlowActive: { _ in })
    }

    /// A flow ping once the socket's last keep-alive answer no longer stands for a new one (a
    /// quarter of the `Flow-Timer: 1`, on the real clock): so this ping asks STUN again. A wait
    /// for the next keep-alive, not a timing assertion.
    static func pingAfresh(_ agent: SIPUserAgent) async throws {
        try await Task.sleep(for: .milliseconds(300))
        try await agent.sendFlowPing(path: loopbackPath())
    }

    /// How many flow pings have returned.
    final class Finished: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
    }

    /// Last session's storm: flow pings the runtime started while a keep-alive was slow all wait
    /// on the socket's one STUN, and all see the new mapping at once. The first registers; the
    /// others must not send a REGISTER of their own while its answer is on its way (the
    /// registrar holds it here until they are done, so each one that did would still be waiting).
    @Test func pingsThatSeeOneRebindingTogetherSendOneREGISTERAndLogItOnce() async throws {
        let registrar = try NATRegistrarPeer()
        let serving = registrar.serve()
        let records = LogRecords()
        let agent = Self.agent(port: registrar.port, records: records)
        try await agent.register(path: loopbackPath())
        registrar.update {
            $0.stunPort = 40_001
            $0.registerPort = 40_001
            $0.holding = true
        }
        let finished = Finished()
        let pings = (0..<3).map { _ in
            Task {
                try await agent.sendFlowPing(path: loopbackPath())
                finished.add()
            }
        }
        let registering = await eventually(within: .seconds(30)) { registrar.registers >= 2 }
        #expect(registering, "no REGISTER after the rebinding: \(registrar.seen)")
        let othersDone = await eventually(within: .seconds(30)) { finished.value >= 2 }
        #expect(othersDone, "pings wait on REGISTERs of their own: \(registrar.seen)")
        registrar.update { $0.holding = false }
        for ping in pings { try await ping.value }
        #expect(registrar.registers == 2, "\(registrar.seen)")
        #expect(records.named("sip.nat-mapping-changed").count == 1)
        registrar.stop()
        await serving.value
        await agent.close()
    }

    /// A ping the runtime superseded (cancelled it) while its keep-alive was out still gets the
    /// shared answer: it must leave the rebinding to the ping that superseded it, neither
    /// claiming it (a cancelled REGISTER would leave it unregistered) nor logging it.
    @Test func aSupersededPingLeavesTheRebindingToTheNextOne() async throws {
        let registrar = try NATRegistrarPeer()
        let serving = registrar.serve()
        let records = LogRecords()
        let agent = Self.agent(port: registrar.port, records: records)
        try await agent.register(path: loopbackPath())
        registrar.update {
            $0.stunPort = 40_001
            $0.registerPort = 40_001
            $0.holdingSTUN = true
        }
        let superseded = Task { try await agent.sendFlowPing(path: loopbackPath()) }
        let asked = await eventually(within: .seconds(30)) { registrar.seen.contains("STUN") }
        #expect(asked, "no keep-alive: \(registrar.seen)")
        superseded.cancel()
        registrar.update { $0.holdingSTUN = false }
        _ = await superseded.result
        #expect(records.named("sip.nat-mapping-changed").isEmpty)
        #expect(registrar.registers == 1, "\(registrar.seen)")
        try await agent.sendFlowPing(path: loopbackPath())
        #expect(registrar.registers == 2, "the next ping registers: \(registrar.seen)")
        #expect(records.named("sip.nat-mapping-changed").count == 1)
        registrar.stop()
        await serving.value
        await agent.close()
    }

    /// A registrar whose Via names another port than its STUN answer (it ignores `rport`, say,
    /// or the NAT maps the two apart): the REGISTER for the new mapping comes back naming the
    /// old one, and every keep-alive sees the difference again. One REGISTER, one line saying the
    /// two disagree, then quiet; a real rebinding after that costs one REGISTER again.
    @Test func aRegistrarThatSeesTheFlowApartFromTheKeepAliveIsRegisteredWithOncePerRebinding() async throws {
        let registrar = try NATRegistrarPeer()
        let serving = registrar.serve()
        let records = LogRecords()
        let agent = Self.agent(port: registrar.port, records: records)
        try await agent.register(path: loopbackPath())
        registrar.update { $0.stunPort = 40_001 }
        for _ in 0..<4 { try await Self.pingAfresh(agent) }
        #expect(registrar.seen.filter { $0 == "STUN" }.count == 4, "each keep-alive asked: \(registrar.seen)")
        #expect(registrar.registers == 2, "\(registrar.seen)")
        #expect(records.named("sip.nat-mapping-changed").count == 1)
        let disagreement = records.named("sip.nat-mapping-disagrees")
        #expect(disagreement.count == 1)
        #expect(disagreement.first?.metadata["registered"] == "198.51.100.7:40000")
        #expect(disagreement.first?.metadata["seen"] == "198.51.100.7:40001")

        registrar.update { $0.stunPort = 40_002 }
        try await Self.pingAfresh(agent)
        #expect(registrar.registers == 3, "a new rebinding registers again: \(registrar.seen)")
        try await Self.pingAfresh(agent)
        #expect(registrar.registers == 3, "\(registrar.seen)")
        #expect(records.named("sip.nat-mapping-changed").count == 2)
        registrar.stop()
        await serving.value
        await agent.close()
    }

    /// RFC 5389's MAPPED-ADDRESS carries an IPv6 address as bytes, which the STUN answer spells
    /// out in full (`[2001:db8:0:0:0:0:0:7]`); the registrar's Via writes it compressed
    /// (`2001:db8::7`). One address: no REGISTER at any keep-alive.
    @Test func anIPv6MappingSpelledTwoWaysIsNoRebinding() async throws {
        let registrar = try NATRegistrarPeer(publicHost: "2001:db8::7")
        let serving = registrar.serve()
        let records = LogRecords()
        let agent = Self.agent(port: registrar.port, records: records)
        try await agent.register(path: loopbackPath())
        for _ in 0..<3 { try await Self.pingAfresh(agent) }
        #expect(registrar.seen.filter { $0 == "STUN" }.count == 3, "each keep-alive asked: \(registrar.seen)")
        #expect(registrar.registers == 1, "\(registrar.seen)")
        #expect(records.named("sip.nat-mapping-changed").isEmpty)
        registrar.stop()
        await serving.value
        await agent.close()
    }
}
