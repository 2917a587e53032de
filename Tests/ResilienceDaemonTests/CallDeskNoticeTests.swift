import Foundation
import Logging
import ResilienceCore
import ResilienceTesting
import SIPPlugin
import Testing

@testable import ResilienceDaemon

/// The call desk's own notices are bounded like the wire's warnings: a peer that sends INVITEs
/// and cancels each at once (or names calls the agent no longer has) cannot flood the log with
/// "could not decline" lines.
@Suite(.timeLimit(.minutes(3)))
struct CallDeskNoticeTests {
    @Test func declinesThatFailForAFloodOfCallsAreLoggedUpToTheLimitAndTheRestCounted() async throws {
        let records = LogRecords()
        let logger = Logger(label: "desk") { _ in RecordingLogHandler(records) }
        let alice = SIPAccount(
            name: "alice", registrarHost: "198.18.0.1", user: "alice", domain: "example.test",
            password: "s3cret-alice")
        let plugin = SIPPlugin(accounts: [alice], logger: logger)
        let desk = CallDesk(
            plugin: plugin, accounts: [DaemonAccount(account: alice, incomingCalls: .reject)],
            path: { NetworkPath(status: .unsatisfied(.noInterface)) }, logger: logger, clock: ContinuousClock())
        // Calls the agent does not hold (as after an immediate CANCEL): each decline fails.
        let flood = 25
        for index in 0..<flood {
            await desk.observe(
                CallEvent(
                    call: CallID("forged-\(index)"), phase: .alerting, trigger: "remote",
                    peer: "sip:mallory@198.18.0.9", reason: nil, glareRetries: 0, direction: .incoming),
                account: alice)
        }
        let message: Logger.Message = "calls: could not decline an incoming call"
        var logged = 0
        var heldBack = 0
        for _ in 0..<3_000 {  // a hang guard of 30 s: the declines run as tasks of the desk
            logged = records.named(message.description).count
            heldBack = await desk.heldBackNotices(message)
            if logged + heldBack >= flood { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(logged == LogThrottle().limit, "\(logged) lines for \(flood) failed declines")
        #expect(heldBack == flood - LogThrottle().limit)
        #expect(records.named(message.description).allSatisfy { $0.metadata["call"] != nil })
    }
}
