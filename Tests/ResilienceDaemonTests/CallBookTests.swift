import Foundation
import Logging
import ResilienceCore
import SIPPlugin
import Testing

@testable import ResilienceDaemon

/// The call listing of `netres ctl calls` and the call log lines, from the agents' call events.
struct CallBookTests {
    let alice = SIPAccount(
        name: "alice", registrarHost: "198.18.0.1", user: "alice", domain: "example.test", password: "s3cret-alice")

    func event(
        _ id: String, _ phase: CallPhase, _ direction: CallDirection = .outgoing, peer: String = "sip:bob@example.test",
        reason: String? = nil, glare: Int = 0
    ) -> CallEvent {
        CallEvent(
            call: CallID(id), phase: phase, trigger: "remote", peer: peer, reason: reason, glareRetries: glare,
            direction: direction)
    }

    @Test func eventsBuildTheListingAndAnEndRemovesTheCall() {
        var book = CallBook()
        let new = [
            book.apply(event("c1", .progressing), account: alice), book.apply(event("c1", .active), account: alice),
            book.apply(event("c2", .alerting, .incoming, peer: "sip:carol@example.test"), account: alice),
        ]
        #expect(new == [true, false, true])
        #expect(book.records.map(\.id.rawValue) == ["c1", "c2"])
        #expect(book.records.map(\.phase) == [.active, .alerting])
        #expect(book.call(of: alice.callService(CallID("c2"))) == CallID("c2"))
        book.recordRecovery("reinvite-call succeeded at T", of: alice.callService(CallID("c1")))
        #expect(book.calls[CallID("c1")]?.lastRecovery == "reinvite-call succeeded at T")
        book.apply(event("c1", .ended, reason: "BYE"), account: alice)
        #expect(book.records.map(\.id.rawValue) == ["c2"])
        #expect(book.call(of: alice.callService(CallID("c1"))) == nil)
        // A second end (a late retransmission's) changes nothing.
        book.apply(event("c1", .ended), account: alice)
        #expect(book.records.count == 1)
    }

    @Test func theBookIsBoundedAndCountsWhatItTurnedAway() {
        var book = CallBook()
        for n in 0..<(CallBook.capacity + 5) { book.apply(event("c\(n)", .alerting, .incoming), account: alice) }
        #expect(book.records.count == CallBook.capacity)
        #expect(book.overflow == 5)
    }

    @Test func theListingEscapesAPeerFromTheWireInTextAndJSON() throws {
        var book = CallBook()
        book.apply(event("c9", .alerting, .incoming, peer: "sip:evil@x.test\r\nX-Injected: 1"), account: alice)
        var records = book.records
        records[0].mediaAddress = "127.0.0.1:40000"
        records[0].packetsReceived = 12
        let human = CallsReport.human(records)
        #expect(!human.contains("\r") && !human.contains("\n"))
        #expect(human.contains("call c9: account alice, incoming from sip:evil@x.test"))
        #expect(human.contains("alerting, media 127.0.0.1:40000, 12 RTP packets received, last recovery: none"))
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(CallsReport.json(records).utf8)) as? [String: Any])
        let call = try #require((json["calls"] as? [[String: Any]])?.first)
        #expect(call["id"] as? String == "c9" && call["account"] as? String == "alice")
        #expect(call["state"] as? String == "alerting" && call["direction"] as? String == "incoming")
        #expect(call["media_address"] as? String == "127.0.0.1:40000")
        #expect(call["rtp_packets_received"] as? Int == 12)
        #expect(call["last_recovery"] is NSNull)
        #expect((call["peer"] as? String)?.contains("\r") == false)
        #expect(CallsReport.human([]) == "no calls")
    }

    @Test func aCallEventIsOneLogLineWithoutPasswordOrRawPeer() throws {
        let line = CallEventLine(clock: WallClock(), json: false)
            .render(event("c3", .ended, peer: "sip:bob@x.test\nforged line", reason: "481", glare: 2), account: alice)
        #expect(!line.contains("\n"))
        #expect(line.contains(" call ended alice.call.c3 outgoing \"sip:bob@x.test"))
        #expect(line.hasSuffix("trigger=remote reason=481 glare-retries=2"))
        #expect(!line.contains("s3cret"))
        let json = CallEventLine(clock: WallClock(), json: true).render(event("c3", .held), account: alice)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "call" && object["event"] as? String == "held")
        #expect(object["service"] as? String == "alice.call.c3" && object["call"] as? String == "c3")
        #expect(object["account"] as? String == "alice" && object["reason"] is NSNull)
        #expect(object["glare_retries"] as? Int == 0)
        for key in ["ts", "mono_ns", "epoch", "action", "attempt", "outcome", "error", "actions"] {
            #expect(object[key] != nil, "stable key \(key)")
        }
    }

    @Test func callEventsAreCountedBesideThePluginsCallInstruments() {
        let metrics = DaemonMetrics()
        // The plugin records its call instruments into the daemon's registry.
        _ = SIPPlugin(accounts: [alice], metricsFactory: metrics.factory, logger: .init(label: "metrics-test"))
        metrics.observe(call: event("c1", .active))
        metrics.observe(call: event("c1", .ended, reason: "481"))
        metrics.observe(call: event("c2", .ended, reason: "BYE"))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"netres_call_events{state="active"} 1"#))
        #expect(text.contains(#"netres_call_events{state="ended"} 2"#))
        for histogram in ["netres_call_recovery", "netres_recovery", "netres_path_downtime"] {
            #expect(text.contains("\(histogram)_bucket{le=\"300.0\"} 0"), "long buckets for \(histogram): \(text)")
        }
        #expect(text.contains("netres_calls_recovered 0"))
    }

    @Test func aRecoveryEventWithItsMeasurementsIsTheCallsLastRecoveryAndInItsLogLine() throws {
        var book = CallBook()
        book.apply(event("c4", .active), account: alice)
        var recovered = event("c4", .active, glare: 1)
        recovered.trigger = "network"
        recovered.downtime = .milliseconds(3100)
        recovered.reinviteRoundTrip = .milliseconds(40)
        recovered.recoveryTime = .milliseconds(3200)
        book.apply(recovered, account: alice, at: "T")
        let last = try #require(book.calls[CallID("c4")]?.lastRecovery)
        #expect(last.hasPrefix("recovered at T: downtime "), "\(last)")
        #expect(last.contains("re-INVITE ") && last.contains("recovery ") && last.hasSuffix("1 glare retries"))
        let json = CallEventLine(clock: WallClock(), json: true).render(recovered, account: alice)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["downtime_ms"] as? Int == 3100 && object["reinvite_rtt_ms"] as? Int == 40)
        #expect(object["recovery_ms"] as? Int == 3200 && object["trigger"] as? String == "network")
        let human = CallEventLine(clock: WallClock(), json: false).render(recovered, account: alice)
        #expect(human.contains("trigger=network glare-retries=1 downtime="), "\(human)")
        let plain = CallEventLine(clock: WallClock(), json: true).render(event("c4", .held), account: alice)
        #expect(plain.contains(#""downtime_ms":null"#))
    }

    /// Issue 25: ~6,000 forged INVITEs gave ~9,000 log lines and 2,991 hook runs. Per call state,
    /// the throttle passes its limit per window; the first line after says how many it held back.
    @Test func aFloodOfCallEventsIsHeldBackAndTheNextLineSaysHowMany() throws {
        let throttle = CallEventThrottle()
        let start = ContinuousClock.now
        let verdicts = (0..<100).map { throttle.admit(event("c\($0)", .alerting, .incoming), at: start) }
        #expect(verdicts.filter { $0 != .suppress }.count == CallEventThrottle.limit)
        #expect(throttle.admit(event("c0", .ended), at: start) == .log(suppressedBefore: 0), "each state apart")
        let later = throttle.admit(event("late", .alerting, .incoming), at: start + CallEventThrottle.window)
        #expect(later == .log(suppressedBefore: 100 - CallEventThrottle.limit))
        let human = CallEventLine(clock: WallClock(), json: false)
            .render(event("late", .alerting, .incoming), account: alice, heldBack: 70)
        #expect(human.hasSuffix("trigger=remote held-back=70"), "\(human)")
        let json = CallEventLine(clock: WallClock(), json: true)
            .render(event("late", .alerting, .incoming), account: alice, heldBack: 70)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["held_back"] as? Int == 70)
    }
}
