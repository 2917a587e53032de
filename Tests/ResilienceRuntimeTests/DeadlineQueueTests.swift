import ResilienceCore
import Testing

@testable import ResilienceRuntime

struct DeadlineQueueTests {
    let start = ContinuousClock.now

    @Test func keysComeOutInDeadlineOrderAndOnlyWhenDue() {
        var queue = DeadlineQueue<ServiceID>()
        var generator = SplitMix64(seed: 7)
        var expected: [(Duration, ServiceID)] = []
        for index in 0..<500 {
            let offset = Duration.milliseconds(Int.random(in: 0..<100_000, using: &generator))
            let id = ServiceID("svc\(index)")
            queue[id] = start + offset
            expected.append((offset, id))
        }
        expected.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        #expect(queue.earliest() == start + expected[0].0)
        let horizon = start + .seconds(50)
        let due = queue.removeDue(by: horizon)
        #expect(due == expected.filter { $0.0 <= .seconds(50) }.map(\.1))
        #expect(due.allSatisfy { queue[$0] == nil })
        let rest = queue.removeDue(by: start + .seconds(1_000))
        #expect(rest == expected.filter { $0.0 > .seconds(50) }.map(\.1))
        #expect(queue.isEmpty && queue.earliest() == nil)
    }

    @Test func reArmingMovesAKeyAndRemovingForgetsIt() {
        var queue = DeadlineQueue<ServiceID>()
        queue["a"] = start + .seconds(1)
        queue["b"] = start + .seconds(2)
        queue["c"] = start + .seconds(3)
        queue["a"] = start + .seconds(10)  // the stale entry at 1 s must not surface
        queue["b"] = nil
        #expect(queue.earliest() == start + .seconds(3))
        #expect(queue.removeDue(by: start + .seconds(5)) == ["c"])
        #expect(queue.removeDue(by: start + .seconds(10)) == ["a"])
        #expect(queue.removeDue(by: start + .seconds(100)).isEmpty)
    }

    @Test func churnDoesNotGrowTheHeapBeyondItsSlack() {
        var queue = DeadlineQueue<ServiceID>()
        let keys = (0..<100).map { ServiceID("svc\($0)") }
        for round in 0..<200 {
            for (index, key) in keys.enumerated() { queue[key] = start + .seconds(round * 100 + index) }
            #expect(queue.storedEntries <= 2 * keys.count + DeadlineQueue<ServiceID>.slack)
        }
        #expect(queue.earliest() == start + .seconds(199 * 100))
        #expect(queue.removeDue(by: start + .seconds(199 * 100 + 99)) == keys)
    }
}
