import Foundation
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

extension SIPCallServiceTests {
    /// An outgoing call still ringing when the address changes (127.0.0.1 → 127.0.0.2): the
    /// registration moves, then `reinvite-call` CANCELs the old INVITE and rings the far end
    /// again from the new address (sipp checks the CANCEL and the second INVITE); the call is
    /// answered there, under the same call id.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func aCallRingingDuringAnAddressChangeIsRungAgainFromTheNewAddress() async throws {
        try await withProxiedCall("uas-ring-again", calls: 2) { kamailio, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let recorder = SIPCallSIPpTests.Recorder(agent)
            let media = RTPEchoSession()
            let placing = Task {
                try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", media: media, path: loopbackPath())
            }
            let ringing = await recorder.events(until: { $0.reason == "ringing" }).last
            let call = try #require(ringing?.call)
            #expect(plugin.performs(.reinviteCall, for: account.callService(call)))

            try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.2"))
            try await plugin.perform(action(.reinviteCall, account.callService(call)), context: context("127.0.0.2"))
            #expect(try await placing.value == call, "the same call, answered at the new address")
            #expect(await agent.activeCalls[call] == .active)
            #expect(await media.localAddress == "127.0.0.2")
            let events = recorder.events
            #expect(
                events.contains { $0.trigger == "network" && $0.phase == .progressing && $0.reason == "recovering" })
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("CANCEL") == 1)
            #expect(sipp.received("INVITE") == 2)
            #expect(kamailio.transactionCount(of: "CANCEL", from: account.user) == 1)
        }
    }

    /// RFC 3891: a far end that lists `replaces` in the `Supported` of its 180 gets, after the
    /// address change, an INVITE whose `Replaces` names its ringing early dialog (`early-only`),
    /// and no CANCEL: its ringing call is replaced, not doubled (sipp checks the header).
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func aRingingCallIsReplacedWhenTheFarEndSupportsReplaces() async throws {
        try await withProxiedCall("uas-ring-replaces", calls: 2) { kamailio, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let (placing, call) = try await placeRinging(agent, to: sipp)
            try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.2"))
            try await plugin.perform(action(.reinviteCall, account.callService(call)), context: context("127.0.0.2"))
            #expect(try await placing.value == call, "the same call, answered at the new address")
            #expect(await agent.activeCalls[call] == .active)
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("INVITE") == 2)
            #expect(sipp.received("CANCEL") == 0, "replaced, not cancelled")
            #expect(kamailio.transactionCount(of: "CANCEL", from: account.user) == 0)
        }
    }

    /// The fresh INVITE goes the moment `reinvite-call` hands the ringing call its new flow: with
    /// the runtime's clock standing still (a `ManualClock` nobody advances), the far end is rung
    /// again all the same, so no poll or timer stands between the two.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func aRingingCallIsRungAgainTheMomentItHasANewFlow() async throws {
        try await withProxiedCall("uas-ring-again", calls: 2) { _, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let (placing, call) = try await placeRinging(agent, to: sipp)
            let moved = PluginContext.fixture(
                path: loopbackPath("127.0.0.2"), clock: ManualClock(), logger: testLogger("still"))
            try await plugin.perform(action(.register, account.registrationService), context: moved)
            try await plugin.perform(action(.reinviteCall, account.callService(call)), context: moved)
            let rungAgain = await eventually(within: .seconds(10)) { sipp.received("INVITE") == 2 }
            #expect(rungAgain, "no fresh INVITE while the clock stood still")
            guard rungAgain else {
                placing.cancel()
                return
            }
            #expect(try await placing.value == call)
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("CANCEL") == 1)
        }
    }

    /// The ringing call's flow ends on its own (as when its address vanishes an instant before
    /// the runtime hears of the change: the socket fails first, and the agent reports the flow
    /// lost): the call waits a moment for `reinvite-call` instead of ending, and is rung again
    /// from the new address.
    @Test(.enabled(if: LabRegistrar.isInstalled, "Kamailio missing: SKIPPED"))
    func aRingingCallWhoseFlowDiedWithItsAddressIsRungAgain() async throws {
        try await withProxiedCall("uas-ring-again", calls: 2) { _, sipp, plugin, account in
            let agent = try #require(plugin.agent(for: account.name))
            let (placing, call) = try await placeRinging(agent, to: sipp)
            let flow = try #require(await agent.transport)
            await agent.flowLost(flow)  // what the flow's close callback does
            try await plugin.perform(action(.register, account.registrationService), context: context("127.0.0.2"))
            try await plugin.perform(action(.reinviteCall, account.callService(call)), context: context("127.0.0.2"))
            #expect(try await placing.value == call, "rung again and answered, not ended")
            try await agent.hangUp(call, path: loopbackPath("127.0.0.2"))
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("INVITE") == 2)
        }
    }

    /// Places a call from `agent` to sipp and waits until it rings (hang guard 10 s); the task
    /// placing it (it returns when the call is answered) and the call.
    func placeRinging(_ agent: SIPUserAgent, to sipp: SIPpHarness) async throws -> (Task<CallID, any Error>, CallID) {
        let recorder = SIPCallSIPpTests.Recorder(agent)
        let placing = Task { try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath()) }
        let ringing = await recorder.events(until: { $0.reason == "ringing" }).last
        return (placing, try #require(ringing?.call))
    }
}
