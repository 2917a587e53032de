import NetlinkMonitor
import ResilienceCore
import Testing

@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(1)))
struct MonitorAPITests {
    @Test func theHoldDownTimerReportsTheLossWhenItExpires() async throws {
        try await MonitorHarness.online(holdDown: .milliseconds(300)) { ns, h in
            try ns.ip("link set veth1 down")
            let noCarrier = try await h.event("veth0 lost carrier") {
                if case .linkChanged(_, let l) = $0 { l.name == "veth0" && l.carrier == .noCarrier } else { false }
            }
            let lost = try await h.transition(.lost(.noCarrier))
            #expect(lost.at - noCarrier.at >= .milliseconds(300))
            #expect(lost.previous?.isSatisfied == true)
        }
    }

    @Test func waitingForThePathSaysWhyItTimedOutAndReturnsOnceOnline() async throws {
        try await MonitorHarness.online { ns, h in
            #expect(try await h.monitor.waitUntilSatisfied(timeout: .seconds(5)).isSatisfied)
            try ns.ip("route del default")
            try await h.transition(.lost(.noDefaultRoute))
            do {
                _ = try await h.monitor.waitUntilSatisfied(timeout: .milliseconds(200))
                Issue.record("waitUntilSatisfied returned while offline")
            } catch let error as NetlinkError {
                #expect(error.timeoutReason == .noDefaultRoute)
                #expect("\(error)".contains("no-default-route"))
            }
            async let waited = h.monitor.waitUntilSatisfied(timeout: .seconds(20))
            try ns.ip("route add default via 198.18.0.1 dev veth0")
            #expect(try await waited.primaryInterface?.name == "veth0")
        }
    }

    @Test func everySubscriberGetsInitialFirstAndShutdownFinishesThem() async throws {
        try await MonitorHarness.online { ns, h in
            let streams = [h.monitor.transitions(), h.monitor.transitions()]
            let events = h.monitor.events()
            for stream in streams {
                var iterator = stream.makeAsyncIterator()
                #expect(await iterator.next()?.kind == .initial)
            }
            await h.monitor.shutdown()
            for stream in streams {
                // Bounded: after shutdown the stream holds at most `.initial` and then ends.
                var count = 0
                for await _ in stream { count += 1 }
                #expect(count == 0)
            }
            var eventCount = 0
            for await _ in events { eventCount += 1 }
            #expect(eventCount == 0)
            var late = h.monitor.transitions().makeAsyncIterator()
            #expect(await late.next() == nil)
        }
    }
}
