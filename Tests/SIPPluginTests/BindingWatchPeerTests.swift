import Foundation
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// Two accounts of one plugin (one shared UDP socket, one `BindingWatch`) at a scripted UDP
/// registrar that forgot them, on a ManualClock: one query speaks for both.
@Suite(.timeLimit(.minutes(3)))
struct BindingWatchPeerTests {
    @Test func oneAccountsQueryFindingItsBindingGoneRenewsTheOtherWithoutAQueryOfItsOwn() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let hub = DatagramFlowHub(log: ThrottledLog(logger: testLogger("watch"), clock: ContinuousClock()))
        let recorders = [LossRecorder(), LossRecorder()]
        let agents = ["forgot1", "forgot2"].enumerated().map { index, user in
            let account = SIPAccount(
                name: user, registrarHost: "127.0.0.1", registrarPort: peer.port, transport: .udp, user: user,
                domain: "127.0.0.1", password: "secret", expires: 300, flowPing: .every(.seconds(30)))
            return SIPUserAgent(
                account: account, timers: SIPTimers(), logger: testLogger(user), clock: clock,
                pacer: RegistrarPacer(settings: .init()), callSurvivalBudget: .seconds(30), flows: hub, directory: nil,
                onFlowLost: { recorders[index].record($0) }, onFlowActive: { _ in })
        }
        // Two REGISTERs, then one query answered without any binding, then one keep-alive.
        let script = Task { await peer.run { BindingQueryPeerTests.registrar($0, requests: 4, forgets: true) } }
        for agent in agents { try await agent.register(path: loopbackPath()) }
        clock.advance(by: .seconds(24))
        try await agents[0].sendFlowPing(path: loopbackPath())
        // The registrar forgot forgot1: it is reported lost, and forgot2 is told to renew.
        #expect(recorders[0].all == [[ServiceID("forgot1.registration")]])
        let alarmed = await eventually(within: .seconds(5)) { !recorders[1].all.isEmpty }
        #expect(alarmed, "the other account was not told to renew")
        // forgot2's ping at the same instant is not a second query: the turn was taken.
        try await agents[1].sendFlowPing(path: loopbackPath())
        let seen = await script.value
        #expect(
            seen.map(\.method) == ["REGISTER", "REGISTER", "REGISTER", "OPTIONS"]
                && seen.map(\.hasContact) == [true, true, false, false], "\(seen)")
        for agent in agents { await agent.close() }
    }
}
