internal import Metrics
internal import ResilienceCore

/// The SIP plugin's call instruments (swift-metrics), fed with every ``CallEvent``:
///
/// - `netres.calls.recovered` (counter): a re-INVITE (or UPDATE) of an established call after a
///   loss or change of the path was answered 2xx (trigger `network`, with a recovery time);
/// - `netres.calls.lost` (counter; dimension `reason`: `outage`, `no-ack`, `481`, `408`): a call
///   ended by the network or a vanished far end, not by either user;
/// - `netres.call.recovery` (timer): a recovery's time from the path's return (or the action's
///   start) to the far end's 2xx.
///
/// Invariant: dimension values come from the fixed list above, never from the wire.
struct CallMetrics: Sendable {
    let recovered: Counter
    let recovery: Metrics.Timer
    let lost: [String: Counter]

    static let lostReasons = ["outage": "outage", "no ACK": "no-ack", "481": "481", "408": "408"]

    init(factory: any MetricsFactory) {
        recovered = Counter(label: "netres.calls.recovered", factory: factory)
        recovery = Metrics.Timer(label: "netres.call.recovery", factory: factory)
        lost = Dictionary(
            uniqueKeysWithValues: Set(Self.lostReasons.values).map {
                ($0, Counter(label: "netres.calls.lost", dimensions: [("reason", $0)], factory: factory))
            })
    }

    func record(_ event: CallEvent) {
        if event.phase == .ended {
            if let reason = event.reason.flatMap({ Self.lostReasons[$0] }) { lost[reason]?.increment() }
        } else if event.trigger == "network", let time = event.recoveryTime {
            // Only a finished recovery carries its time (not a ringing call rung again).
            recovered.increment()
            recovery.recordNanoseconds(time.nanosecondsValue)
        }
    }
}
