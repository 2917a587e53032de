import NetworkLab
import Synchronization
import Testing

@testable import SIPPlugin

extension SharedDatagramFlowTests {
    /// Sends from many tasks at once (as a CANCEL and the fresh INVITE of a call rung again, or
    /// the REGISTERs of many accounts) all complete: every write is flushed. A write that ran
    /// after another sender had queued the pass's flush but before that flush ran once waited
    /// for a flush nobody queued, and its sender hung.
    @Test func concurrentSendsOnOneSocketAllComplete() async throws {
        let peer = try UDPTestPeer()
        let flow = try await flow("racer", to: peer)
        let bytes = request("OPTIONS", from: flow, user: "racer").serialized()
        let (rounds, width) = (40, 64)
        final class Count: Sendable { let value = Atomic<Int>(0) }
        let done = Count()
        // Unstructured: a send that never completes must fail this test, not hang it.
        let sender = Task {
            for _ in 0..<rounds {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<width {
                        group.addTask {
                            try? await flow.send(bytes: bytes)
                            done.value.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
        }
        // A hang guard on progress, not on the whole: a lost flush stops the count for good, while
        // a full test run may keep this process's two pool threads busy for many seconds (the
        // sends then resume where they were, and a 30 s deadline for all of them failed).
        var (count, lastProgress) = (0, ContinuousClock.now)
        for _ in 0..<600 where count < rounds * width && ContinuousClock.now - lastProgress < .seconds(30) {
            try await Task.sleep(for: .milliseconds(100))
            let now = done.value.load(ordering: .relaxed)
            if now > count { (count, lastProgress) = (now, .now) }
        }
        #expect(count == rounds * width, "\(count) of \(rounds * width) sends completed, none for 30 s")
        await flow.close()
        sender.cancel()
    }
}
