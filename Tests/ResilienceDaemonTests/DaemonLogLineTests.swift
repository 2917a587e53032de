import ResilienceCore
import ResilienceOutput
import ResilienceRuntime
import ResilienceTesting
import Testing

/// `print(event)` and the daemon's human log say the same words: the log line is the timestamp
/// and the event's description.
struct DaemonLogLineTests {
    let clock = WallClock()
    let t0 = ContinuousClock.now

    var events: [ResilienceEvent] {
        let lost = PathTransition(
            kind: .lost(.noCarrier), path: .lost(), previous: ScriptedNetworkSource.satisfiedPath, at: t0)
        let action = PlannedAction.fixture(.register, for: "alice.reg")
        return [
            .transition(lost),
            .decision(trigger: .network(.restored), epoch: NetworkEpoch(rawValue: 1), actions: [action], at: t0),
            .action(
                ActionEvent(
                    action: action, epoch: NetworkEpoch(rawValue: 1), attempt: 2,
                    outcome: .retrying(at: nil, error: PluginError("503 Service Unavailable")), at: t0)),
            .flapCoalesced(lost: lost, restored: lost),
        ]
    }

    @Test func theHumanLogIsTheTimestampAndTheDescription() {
        var line = DaemonLogLine(clock: clock, json: false)
        for event in events {
            let rendered = line.render(event, at: t0)
            let words = rendered.drop { $0 != " " }.dropFirst()
            #expect(words.trimmingTrailingSpaces == event.description, "\(rendered)")
            #expect(!event.description.contains("\n"))
        }
    }

    @Test func descriptionsReadLikeTheLog() {
        let described = events.map(\.description)
        #expect(described[0] == "lost      eth0#2 satisfied -> unsatisfied (no-carrier)")
        #expect(described[1] == "decision network.restored epoch=1 [register alice.reg]")
        #expect(
            described[2]
                == "action network.restored epoch=1 register alice.reg #2 -> retrying (503 Service Unavailable)")
        #expect(described[3] == "flap flap-coalesced")
        #expect("\(ActionOutcome.retrying(at: nil, error: PluginError("busy")))" == "retrying (busy)")
    }
}

extension Substring {
    fileprivate var trimmingTrailingSpaces: String {
        var text = String(self)
        while text.last == " " { text.removeLast() }
        return text
    }
}
