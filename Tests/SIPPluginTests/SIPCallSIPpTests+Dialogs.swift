import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// The call machine's rules against sipp as a real far end: route sets (RFC 3261 §12), glare
/// (§14.2) and the ringing timeout of an incoming call.
extension SIPCallSIPpTests {
    /// §12.1.1: "The UAS MUST copy all Record-Route header field values from the request into
    /// the response"; the caller's ACK and BYE then go through its proxies, not to our Contact
    /// (without it a call placed to netres through a record-routing proxy died at 32 s). sipp
    /// checks the 180 and 200 copy Record-Route in order, and that our BYE carries the route
    /// set as Route in order with the caller's Contact as Request-URI (§12.2.1.1).
    @Test func anIncomingCallCopiesRecordRouteAndRoutesItsByeThroughTheRouteSet() async throws {
        try await withSIPp("uac-record-route") { sipp in
            let agent = agent(for: sipp, user: uniqueUser("callee"))
            let recorder = Recorder(agent)
            try await agent.register(path: loopbackPath())
            let rung = await recorder.events(until: { $0.phase == .alerting }).first { $0.phase == .alerting }
            let call = try #require(rung?.call)
            try await agent.answer(call, path: loopbackPath())
            #expect(await eventually(within: .seconds(10)) { await agent.calls[call]?.awaitingAck == nil })
            try await agent.hangUp(call, path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            let events = await recorder.events(until: { $0.phase == .ended })
            #expect(events.map(\.phase) == [.alerting, .active, .ended])
            await agent.close()
        }
    }

    /// RFC 3261 §13.3.1.1: a UAS that cannot answer in a reasonable time ends the INVITE;
    /// 480 Temporarily Unavailable says nobody is there now. Without the ringing timeout a
    /// forged INVITE rang forever and held its transaction (issue 25).
    @Test func aRingingCallNobodyAnswersEndsWith480AtTheRingingTimeout() async throws {
        try await withSIPp("uac-ring-timeout") { sipp in
            let user = uniqueUser("callee")
            var impatient = account(for: sipp, user: user)
            impatient.ringingTimeout = .seconds(1)
            let agent = SIPUserAgent(account: impatient, logger: testLogger(user))
            let recorder = Recorder(agent)
            try await agent.register(path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            let events = await recorder.events(until: { $0.phase == .ended })
            #expect(events.map(\.phase) == [.alerting, .ended])
            #expect(events.last?.reason == "480" && events.last?.trigger == "timeout")
            #expect(await agent.activeCalls.isEmpty)
            await agent.close()
        }
    }

    /// §14.2 allows 491 only while our own offer is pending: after the far end answered our
    /// re-INVITE 491 we only wait out the retry timer, so its own re-INVITE meanwhile is
    /// answered 200 (sipp checks), and our retry follows.
    @Test func theFarEndsReinviteDuringOurGlareWaitIsAnsweredNotRefused() async throws {
        try await withSIPp("uas-glare-answered") { sipp in
            let agent = agent(for: sipp, user: uniqueUser("caller"))
            let recorder = Recorder(agent)
            let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            try await agent.hold(call, path: loopbackPath())
            #expect(await agent.activeCalls[call] == .held)
            let held = await recorder.events(until: { $0.phase == .held && $0.glareRetries == 1 }).last
            #expect(held?.glareRetries == 1)
            try await agent.hangUp(call, path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("INVITE") == 3)
            await agent.close()
        }
    }

    /// The one door: a library user places, holds, resumes and ends a call through the plugin's
    /// call API by account name and follows it on `callEvents(of:)`, as `netres run` does; an
    /// unknown account is a permanent failure, not a crash or a silent nil.
    @Test func thePluginsCallAPIPlacesHoldsResumesAndEndsACall() async throws {
        try await withSIPp("uas-hold-resume") { sipp in
            let user = uniqueUser("door")
            let plugin = SIPPlugin(accounts: [account(for: sipp, user: user)], logger: testLogger(user))
            let events = try #require(plugin.callEvents(of: user))
            let phases = Task {
                await events.prefix { $0.phase != .ended }.map(\.phase).reduce(into: []) { $0.append($1) }
            }
            let call = try await plugin.placeCall(
                account: user, to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            #expect(await plugin.calls(of: user)[call] == .active)
            try await plugin.hold(call, account: user, path: loopbackPath())
            #expect(await plugin.calls(of: user)[call] == .held)
            try await plugin.resume(call, account: user, path: loopbackPath())
            try await plugin.hangUp(call, account: user, path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(await phases.value == [.progressing, .active, .held, .active])
            #expect(await plugin.calls(of: user).isEmpty)
            await #expect(throws: PluginError.permanent("sip: no account \"nobody\"")) {
                try await plugin.hangUp(call, account: "nobody", path: loopbackPath())
            }
            #expect(plugin.callEvents(of: "nobody") == nil)
            await plugin.agent(for: user)?.close()
        }
    }
}
