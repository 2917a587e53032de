import Foundation
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

extension SIPCallSIPpTests {
    /// The app's media: RTPEchoSession for our offers, but it cannot answer the far end's.
    final class NoAnswerMedia: MediaSession {
        let echo = RTPEchoSession()
        struct Refused: Error {}

        func describe(
            localAddress: String, direction: SessionDescription.Direction, answering offer: SessionDescription?
        ) async throws -> [SessionDescription.Media] {
            guard offer == nil else { throw Refused() }
            return try await echo.describe(localAddress: localAddress, direction: direction, answering: nil)
        }

        func negotiated(_ media: NegotiatedMedia) async throws { try await echo.negotiated(media) }
        func close() async { await echo.close() }
    }

    /// A re-INVITE whose offer our media session cannot answer is refused 488, and that INVITE
    /// ends there: the call's one offer slot is free again, so our own hold goes (a slot left
    /// taken refuses it as "already running", and would hold a recovery's re-INVITE 64×T1).
    @Test func aReofferTheMediaRefusesIsAnswered488AndFreesTheOfferSlot() async throws {
        try await withSIPp("uas-refused-reoffer") { sipp in
            let agent = agent(for: sipp, user: uniqueUser("caller"))
            let call = try await agent.placeCall(
                to: "sip:far@127.0.0.1:\(sipp.port)", media: NoAnswerMedia(), path: loopbackPath())
            let refused = await eventually(within: .seconds(10)) { sipp.messages.contains("SIP/2.0 488") }
            try #require(refused, "no 488: \(sipp.errors.suffix(800))")
            #expect(await agent.calls[call]?.machine.offerSlotFree == true)
            try await agent.hold(call, path: loopbackPath())
            #expect(await agent.activeCalls[call] == .held)
            try await agent.hangUp(call, path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            await agent.close()
        }
    }
}

extension SIPCallSIPpTests {
    /// Hanging up while the network is gone ends the call at once (no error for the user) and
    /// sends nothing; the BYE goes when the path is satisfied again, and sipp answers it.
    @Test func aHangUpWithoutNetworkEndsTheCallAndItsByeGoesWhenThePathReturns() async throws {
        try await withSIPp("uas-answer-bye") { sipp in
            let agent = agent(for: sipp, user: uniqueUser("caller"))
            let call = try await agent.placeCall(to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            let lost = NetworkPath(status: .unsatisfied(.noCarrier))
            agent.pathChanged(lost)
            try await agent.hangUp(call, path: lost)
            #expect(await agent.activeCalls[call] == nil, "the call ended for the app")
            try await Task.sleep(for: .milliseconds(300))
            #expect(sipp.received("BYE") == 0, "a BYE went while the path was down")
            agent.pathChanged(loopbackPath())
            #expect(await eventually(within: .seconds(10)) { sipp.received("BYE") == 1 })
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            await agent.close()
        }
    }
}
