import ResilienceCore
import Testing

@testable import SIPPlugin

/// The pure parts of the call layer: RFC 3261 §14.1's glare wait and who holds a call.
struct SIPCallTests {
    @Test(arguments: [(true, Duration.milliseconds(2_100), Duration.seconds(4)), (false, .zero, .seconds(2))])
    func glareWaitStaysInTheRFCWindow(ownsCallID: Bool, low: Duration, high: Duration) {
        var generator = SystemRandomNumberGenerator()
        let waits = (0..<2_000).map { _ in GlareWait.duration(ownsCallID: ownsCallID, using: &generator) }
        #expect(waits.allSatisfy { $0 >= low && $0 <= high })
        // Random, not fixed: both ends of the window are reached within 2,000 draws (a miss has
        // odds below e^-100).
        #expect(waits.min()! < low + .milliseconds(100))
        #expect(waits.max()! > high - .milliseconds(100))
    }

    /// The far end's offered direction, why we hold, and the phase that makes.
    static let holdCases: [(SessionDescription.Direction, [HoldReason], CallPhase)] = [
        (.sendrecv, [], .active), (.sendonly, [], .remotelyHeld), (.inactive, [], .remotelyHeld),
        (.sendrecv, [.user], .held), (.sendonly, [.interruption], .held), (.sendrecv, [.user, .interruption], .held),
    ]

    @Test(arguments: 0..<holdCases.count)
    func phaseFollowsWhoHolds(index: Int) throws {
        let (remote, reasons, phase) = Self.holdCases[index]
        var call = try CallScript.ringing(offering: remote)
        _ = call.handle(.answer)
        _ = call.handle(.mediaDescribed(.answer, .success(CallScript.audio), address: "198.18.0.1"))
        for reason in reasons {
            let exchange = call.exchange()
            _ = call.handle(.hold(reason, exchange, flow: CallScript.wifi))
        }
        #expect(call.machine.confirmedPhase == phase)
    }

    /// One word set: a call's phase is printed (`ctl calls`, hooks, logs, metrics) in the words a
    /// policy file keys on; only `ended` is the plugin's own.
    @Test func everyPhaseButEndedIsThePolicysCallStateOfTheSameWord() {
        for phase in CallPhase.allCases where phase != .ended {
            #expect(phase.serviceState?.rawValue == phase.rawValue, "\(phase)")
        }
        #expect(CallPhase.ended.serviceState == nil)
        #expect(Set(CallPhase.allCases.compactMap(\.serviceState)) == Set(CallState.allCases))
        #expect(CallPhase.remotelyHeld.rawValue == "remotely-held" && CallPhase.alerting.rawValue == "alerting")
    }
}
