import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// Regression tests for call bugs, each against sipp as the far end: the scenario's own checks
/// (an unexpected or missing message fails it) are the witness.
extension SIPCallSIPpTests {
    @Test func aCancelWaitsForTheFirstProvisionalResponse() async throws {
        try await withSIPp("uas-cancel-early") { sipp in
            let agent = agent(for: sipp, user: uniqueUser("caller"))
            let recorder = Recorder(agent)
            let placing = Task { try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath()) }
            let outgoing = await recorder.events(until: { $0.phase == .progressing }).first
            let call = try #require(outgoing?.call)
            // sipp has the INVITE but stays silent for a second: no provisional yet.
            #expect(await eventually(within: .seconds(10)) { sipp.received("INVITE") >= 1 })
            try await agent.hangUp(call, path: loopbackPath())
            #expect(sipp.received("CANCEL") == 0, "no CANCEL before a provisional (RFC 3261 §9.1)")
            await #expect(throws: PluginError.self) { try await placing.value }
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("CANCEL") == 1)
            #expect(recorder.events.last?.reason == "CANCEL")
            await agent.close()
        }
    }

    @Test func a200CrossingTheCancelIsAckedAndEndedWithBye() async throws {
        try await withSIPp("uas-answer-after-cancel") { sipp in
            let (agent, recorder) = try await hangUpWhileRinging(sipp)
            #expect(sipp.received("ACK") == 1)
            #expect(sipp.received("BYE") == 1)
            #expect(recorder.events.map(\.phase) == [.progressing, .progressing, .ended])
            #expect(await agent.activeCalls.isEmpty)
            await agent.close()
        }
    }

    @Test func aFinalTheFarEndNeverAcksEndsTheCall() async throws {
        try await withSIPp("uas-final-not-acked") { sipp in
            // T1 = 50 ms: timer H gives up after 3.2 s instead of 32 s.
            let agent = agent(for: sipp, user: uniqueUser("caller"), timers: SIPTimers(t1: .milliseconds(50)))
            let recorder = Recorder(agent)
            let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            let ended = await recorder.events(until: { $0.phase == .ended }, within: 15).last
            #expect(ended?.call == call)
            #expect(ended?.phase == .ended)
            #expect(ended?.reason == "no ACK")
            #expect(ended?.trigger == "timeout")
            #expect(await agent.activeCalls.isEmpty)
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            #expect(sipp.received("INVITE") == 1)
            await agent.close()
        }
    }
}
