import Logging
import NetlinkMonitor
import ResilienceCore
import Testing

/// The monitor against the real kernel, read-only, in the test's own namespace (no root needed).
@Suite(.timeLimit(.minutes(3)))
struct NetlinkMonitorTests {
    let logger = Logger(label: "netlink-monitor-tests")

    @Test func itDumpsTheCurrentNamespaceAndStartsWithInitial() async throws {
        let monitor = NetlinkMonitor(logger: logger)
        try await monitor.start()
        #expect(monitor.snapshot().links.values.contains { $0.isLoopback })
        #expect(monitor.grantedReceiveBufferSize ?? 0 > 0)
        var transitions = monitor.transitions().makeAsyncIterator()
        #expect(await transitions.next()?.kind == .initial)
        await expectThrows { try await monitor.start() }
        await monitor.shutdown()
        await monitor.shutdown()
        #expect(await transitions.next() == nil)
    }

    @Test func aMissingNamespaceFailsStartWithAClearError() async throws {
        let monitor = NetlinkMonitor(
            namespace: "nr-does-not-exist-\(UInt32.random(in: 0...UInt32.max))", logger: logger)
        var events = monitor.events().makeAsyncIterator()
        do {
            try await monitor.start()
            Issue.record("start succeeded in a namespace that does not exist")
        } catch let error as NetlinkError {
            #expect(error.errno != nil)
            #expect("\(error)".contains("namespace"))
        }
        #expect(await events.next() == nil)
        await monitor.shutdown()
    }

    @Test func shutdownBeforeStartFinishesStreams() async {
        let monitor = NetlinkMonitor(logger: logger)
        var transitions = monitor.transitions().makeAsyncIterator()
        await monitor.shutdown()
        #expect(await transitions.next() == nil)
        await expectThrows { try await monitor.start() }
    }

    private func expectThrows(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async
    {
        do {
            try await body()
            Issue.record("expected an error", sourceLocation: sourceLocation)
        } catch {}
    }
}
