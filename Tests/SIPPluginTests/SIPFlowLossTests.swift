import Foundation
import Logging
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Flow losses against scripted peers on loopback: which endings are reported, and which not.
@Suite(.timeLimit(.minutes(3)))
struct SIPFlowLossTests {
    func makeAgent(
        port: Int, transport: SIPTransportKind = .udp, timers: SIPTimers = SIPTimers(),
        flowPing: FlowPingSetting = .transportDefault, recorder: LossRecorder,
        clock: any RuntimeClock = ContinuousClock()
    ) -> (SIPUserAgent, SIPAccount) {
        let account = SIPAccount(
            name: "flow", registrarHost: "127.0.0.1", registrarPort: port, transport: transport, user: "flow",
            domain: "127.0.0.1", password: "secret", expires: 300, flowPing: flowPing)
        let agent = SIPUserAgent(account: account, timers: timers, logger: testLogger("flow"), clock: clock) {
            recorder.record($0)
        }
        return (agent, account)
    }

    /// Answers one framed request on `connection` with 200 OK (plus `extra` headers).
    static func answer(_ peer: TCPTestPeer, on connection: Int32) -> Bool {
        guard let request = peer.receive(on: connection, within: 5) else { return false }
        peer.send(request.makeResponse(status: 200, reason: "OK", toTag: "p").serialized(), on: connection)
        return true
    }

    @Test func serverClosingTheTCPConnectionIsReportedOnceWithTheRegistration() async throws {
        let peer = try TCPTestPeer()
        let recorder = LossRecorder()
        let (agent, account) = makeAgent(port: peer.port, transport: .tcp, recorder: recorder)
        let script = Task {
            await peer.run { peer -> Bool in
                guard let connection = peer.accept(within: 5) else { return false }
                defer { close(connection) }  // the server ends the flow
                return Self.answer(peer, on: connection)
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await script.value)
        #expect(await eventually(within: .seconds(5)) { !recorder.all.isEmpty })
        #expect(await agent.boundAddress == nil)
        await agent.close()  // nothing left to close: no second report
        #expect(recorder.all == [[account.registrationService]])
    }

    @Test func flowsTheAgentClosesItselfAreNeverReported() async throws {
        let peer = try TCPTestPeer()
        let recorder = LossRecorder()
        let (agent, account) = makeAgent(port: peer.port, transport: .tcp, recorder: recorder)
        let script = Task {
            await peer.run { peer -> Int in
                var answered = 0
                // 1: closed as stale; 2: replaced by a new address; 3: closed at shutdown;
                // 4: closed by this peer, the one loss.
                for _ in 0..<4 {
                    guard let connection = peer.accept(within: 5) else { return answered }
                    defer { close(connection) }
                    guard Self.answer(peer, on: connection) else { return answered }
                    answered += 1
                    if answered < 4 {
                        // Hold the connection until the agent closes it (recv returns 0).
                        _ = peer.receive(on: connection, within: 5)
                    }
                }
                return answered
            }
        }
        try await agent.register(path: loopbackPath())
        await agent.closeStaleTransports(path: loopbackPath("127.0.0.2"))
        #expect(await agent.boundAddress == nil)
        try await agent.register(path: loopbackPath("127.0.0.2"))
        try await agent.register(path: loopbackPath("127.0.0.3"))
        #expect(await agent.boundAddress == "127.0.0.3")
        await agent.close()
        try await agent.register(path: loopbackPath())
        #expect(await script.value == 4)
        #expect(await eventually(within: .seconds(5)) { !recorder.all.isEmpty })
        #expect(recorder.all == [[account.registrationService]], "only the peer's close is a loss")
        await agent.close()
    }

    @Test func udpRegisterToAPortNobodyListensOnFailsAsAClosedFlowAndIsReported() async throws {
        let recorder = LossRecorder()
        let (agent, account) = makeAgent(port: try LoopbackPort.free(), recorder: recorder)
        await #expect {
            try await agent.register(path: loopbackPath())
        } throws: { error in
            // The ICMP port unreachable ends the flow; a 64×T1 timeout would say "no response".
            guard let error = error as? PluginError else { return false }
            return error.isRetryable && error.message.contains("flow closed")
        }
        #expect(await eventually(within: .seconds(5)) { !recorder.all.isEmpty })
        #expect(recorder.all == [[account.registrationService]])
        await agent.close()
    }

    /// The pong timeout runs on a `ManualClock`: the OPTIONS ping surely leaves before the test
    /// moves the clock past the timeout, however slow the machine.
    @Test func unansweredUDPFlowPingClosesTheFlowReportsItAndIsNotRetried() async throws {
        let peer = try UDPTestPeer()
        let recorder = LossRecorder()
        let clock = ManualClock()
        let timers = SIPTimers(t1: .milliseconds(50), pongTimeout: .milliseconds(300))
        let (agent, account) = makeAgent(port: peer.port, timers: timers, recorder: recorder, clock: clock)
        let script = Task {
            await peer.run { peer -> [(method: String, cseq: UInt32)] in
                // Until the first OPTIONS (bounded): REGISTERs are answered, OPTIONS never.
                var methods: [(method: String, cseq: UInt32)] = []
                while methods.count < 20, methods.last?.method != "OPTIONS",
                    let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard)
                {
                    guard let request = try? SIPParser.parse(datagram: bytes) else { continue }
                    methods.append((request.method ?? "?", request.cseq?.number ?? 0))
                    if request.method == "REGISTER" {
                        peer.send(request.makeResponse(status: 200, reason: "OK", toTag: "p").serialized(), to: from)
                    }
                }
                return methods
            }
        }
        try await agent.register(path: loopbackPath())
        let ping = Task { try await agent.sendFlowPing(path: loopbackPath()) }
        var methods = await script.value
        await clock.waitForSleepers(count: 3)  // the OPTIONS' timers E and F and the pong timeout
        clock.advance(by: timers.pongTimeout)
        let (result, hung) = await outcome(of: ping)
        #expect(!hung, "the pong timeout did not end the ping")
        #expect {
            try result.get()
        } throws: { error in
            (error as? PluginError)?.isRetryable == false
        }
        #expect(await agent.boundAddress == nil)
        #expect(await eventually(within: .seconds(5)) { !recorder.all.isEmpty })
        #expect(recorder.all == [[account.registrationService]])
        await agent.close()
        // Whatever else the agent sent is queued at the peer by now.
        methods += await peer.run { peer -> [(method: String, cseq: UInt32)] in
            var rest: [(method: String, cseq: UInt32)] = []
            while rest.count < 20, let (bytes, _) = peer.receive(within: 0.5) {
                guard let request = try? SIPParser.parse(datagram: bytes) else { continue }
                rest.append((request.method ?? "?", request.cseq?.number ?? 0))
            }
            return rest
        }
        // One REGISTER transaction, then only OPTIONS: the agent itself never re-registers over
        // a flow it found dead.
        let registers = methods.prefix { $0.method == "REGISTER" }
        #expect(registers.count == 1, "\(methods)")
        let rest = methods.dropFirst(registers.count)
        #expect(!rest.isEmpty && rest.allSatisfy { $0.method == "OPTIONS" }, "\(methods)")
    }

    @Test func flowTimerOfThe2xxSetsTheFlowPingIntervalElseTheAccountsSetting() async throws {
        let peer = try UDPTestPeer()
        let recorder = LossRecorder()
        let (agent, _) = makeAgent(port: peer.port, recorder: recorder)
        let script = Task {
            await peer.run { peer -> Int in
                var answered = 0
                while answered < 2, let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                    guard let request = try? SIPParser.parse(datagram: bytes) else { continue }
                    var response = request.makeResponse(status: 200, reason: "OK", toTag: "p")
                    if answered == 0 { response.headers.add("Flow-Timer", "25") }
                    peer.send(response.serialized(), to: from)
                    answered += 1
                }
                return answered
            }
        }
        #expect(await agent.registrationStatus.flowPingInterval == nil, "not registered")
        try await agent.register(path: loopbackPath())
        #expect(await agent.registrationStatus.flowPingInterval == .seconds(25))
        try await agent.register(path: loopbackPath())
        #expect(await agent.registrationStatus.flowPingInterval == .seconds(30), "UDP default")
        #expect(await script.value == 2)
        await agent.close()
        #expect(recorder.all.isEmpty)
    }

    @Test func flowPingOffMeansNoInterval() async throws {
        let peer = try UDPTestPeer()
        let recorder = LossRecorder()
        let (agent, _) = makeAgent(port: peer.port, flowPing: .off, recorder: recorder)
        let script = Task {
            await peer.run { peer -> Bool in
                guard let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                    let request = try? SIPParser.parse(datagram: bytes)
                else { return false }
                var response = request.makeResponse(status: 200, reason: "OK", toTag: "p")
                response.headers.add("Flow-Timer", "25")
                peer.send(response.serialized(), to: from)
                return true
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await script.value)
        #expect(await agent.registrationStatus.contact != nil)
        #expect(await agent.registrationStatus.flowPingInterval == nil)
        await agent.close()
    }
}
