import Foundation
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

extension SIPCallSIPpTests {
    /// A library user's call without media of its own (`placeCall(account:to:path:)`) gets the
    /// built-in echo on the clock lent to the plugin: its RFC 6263 keep-alive (the first at once,
    /// the next after 15 s of silence) follows a `ManualClock` the test advances. Before, the
    /// default was `RTPEchoSession()` on a `ContinuousClock` of its own: the second keep-alive
    /// never came however far the lent clock went, and the process woke once a second.
    @Test func aCallPlacedWithoutMediaKeepsItsMediaTimerOnTheLentClock() async throws {
        try await withSIPp("uas-answer-bye") { sipp in
            let user = uniqueUser("lent")
            let plugin = SIPPlugin(accounts: [account(for: sipp, user: user)], logger: testLogger(user))
            let agent = try #require(plugin.agent(for: user))
            let clock = ManualClock()
            agent.lend(clock: clock)
            let call = try await plugin.placeCall(
                account: user, to: "sip:far@127.0.0.1:\(sipp.port)", path: loopbackPath())
            let media = try #require(await agent.calls[call]?.media as? RTPEchoSession, "the default is the echo")
            let first = await eventually(within: .seconds(5)) { await media.keepAlivesSent == 1 }
            #expect(first, "the first keep-alive goes at once")
            // Each step: a sleeper on the lent clock (none when the media sleeps elsewhere), then
            // 15 s of lent time; bounded, 10 steps at most.
            var steps = 0
            while await media.keepAlivesSent < 2, steps < 10 {
                _ = await eventually(within: .seconds(1)) { clock.sleeperCount > 0 }
                clock.advance(by: RTPKeepAlive.defaultInterval)
                _ = await eventually(within: .milliseconds(500)) { await media.keepAlivesSent >= 2 }
                steps += 1
            }
            #expect(await media.keepAlivesSent >= 2, "the next keep-alive came with the lent clock's 15 s")
            try await plugin.hangUp(call, account: user, path: loopbackPath())
            #expect(await sipp.exitStatus(within: 30) == 0, "sipp: \(sipp.errors.suffix(800))")
            await agent.close()
        }
    }
}
