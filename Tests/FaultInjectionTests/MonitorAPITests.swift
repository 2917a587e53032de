import NetlinkMonitor
import NetworkLab
import ResilienceCore
import Testing

@Suite(.serialized, .needsNamespaces, .timeLimit(.minutes(3)))
struct MonitorAPITests {
    @Test func theHoldDownTimerReportsTheLossWhenItExpires() async throws {
        try await MonitorHarness.online(holdDown: .milliseconds(300)) { ns, h in
            try await ns.setPeer(up: false)
            let noCarrier = try await h.event("veth0 lost carrier") {
                if case .linkChanged(_, let l) = $0 { l.name == "veth0" && l.carrier == .noCarrier } else { false }
            }
            let lost = try await h.transition(.lost(.noCarrier))
            #expect(lost.at - noCarrier.at >= .milliseconds(300))
            #expect(lost.previous?.isSatisfied == true)
        }
    }

    @Test func theFilterDecidesWhichInterfacesCount() async throws {
        try await OnlineLab.with { ns in
            try await MonitorHarness.with(ns, filter: InterfaceFilter(["eth*"])) { h in
                let initial = try await h.transition(.initial)
                #expect(initial.path.status == .unsatisfied(.noInterface))
                #expect(h.monitor.snapshot().link(named: "veth0") != nil, "events and facts cover every link")
            }
            try await MonitorHarness.with(ns, filter: InterfaceFilter(["veth[0-9]"])) { h in
                let initial = try await h.transition(.initial)
                #expect(initial.path.primaryInterface?.name == "veth0")
            }
        }
    }

    @Test func waitingForThePathSaysWhyItTimedOutAndReturnsOnceOnline() async throws {
        try await MonitorHarness.online { ns, h in
            #expect(try await h.monitor.waitUntilSatisfied(timeout: .seconds(5)).isSatisfied)
            try await ns.ip("route del default")
            try await h.transition(.lost(.noDefaultRoute))
            do {
                _ = try await h.monitor.waitUntilSatisfied(timeout: .milliseconds(200))
                Issue.record("waitUntilSatisfied returned while offline")
            } catch let error as NetlinkError {
                #expect(error.timeoutReason == .noDefaultRoute)
                #expect("\(error)".contains("no-default-route"))
            }
            async let waited = h.monitor.waitUntilSatisfied(timeout: .seconds(20))
            try await ns.ip("route add default via 198.18.1.1 dev veth0")
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

extension MonitorAPITests {
    @Test func anIdleReaderDoesNotWakeUp() async throws {
        // No IPv6: link-local addresses and DAD would legitimately wake the reader a second later.
        try await OnlineLab.with(ipv6: false) { ns in
            try await MonitorHarness.with(ns) { h in
                #expect(try await h.transition(.initial).path.isSatisfied)
                #expect(h.monitor.grantedReceiveBufferSize ?? 0 >= 4 << 20, "SO_RCVBUFFORCE as root")
                let thread = try #require(h.monitor._readerThreadID)
                // The kernel may still finish link set-up (linkwatch runs up to 1 s late), so look for
                // one quiet 1 s window among five; any polling timer would make every window noisy.
                var wakeUps: [Int] = []
                for _ in 0..<5 {
                    let before = try #require(ReaderThreadStats.contextSwitches(thread: thread))
                    try await Task.sleep(for: .seconds(1))  // a measuring window, not a wait for an event
                    wakeUps.append(try #require(ReaderThreadStats.contextSwitches(thread: thread)) - before)
                    if wakeUps.last == 0 { break }
                }
                #expect(wakeUps.last == 0, "reader wake-ups per idle second: \(wakeUps)")
            }
        }
    }
}
