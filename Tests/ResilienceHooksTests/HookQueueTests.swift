import ResilienceCore
import Testing

@testable import ResilienceHooks

/// What waits for the hook worker: newest transition wins, call events queue in order, bounded.
@Suite struct HookQueueTests {
    func transition(_ kind: PathTransition.Kind) -> PathTransition {
        PathTransition(kind: kind, path: NetworkPath(status: .satisfied), at: .now)
    }

    func names(_ queue: inout HookQueue) -> [String] {
        var names: [String] = []
        while let next = queue.next() {
            switch next.job {
            case .transition(let transition): names.append("\(transition.kind)")
            case .call(let variables): names.append(variables["NETRES_CALL_ID"] ?? "?")
            }
        }
        return names
    }

    @Test func aNewerTransitionReplacesTheWaitingOneButCallEventsAllStay() {
        var queue = HookQueue()
        queue.submit(.transition(transition(.initial)))
        queue.submit(.call(["NETRES_CALL_ID": "c1"]))
        queue.submit(.transition(transition(.lost(.noCarrier))))
        queue.submit(.call(["NETRES_CALL_ID": "c2"]))
        let first = queue.next()
        #expect(first?.coalesced == 1 && first?.droppedCalls == 0)
        if case .call(let variables)? = first?.job {
            #expect(variables["NETRES_CALL_ID"] == "c1")
        } else {
            Issue.record("the oldest job leaves first: \(String(describing: first))")
        }
        var rest = queue
        let order = names(&rest)
        #expect(order.count == 2 && order.last == "c2" && order.first?.hasPrefix("lost") == true, "\(order)")
    }

    @Test func callEventsPastTheCapacityDropTheOldestAndCountThem() {
        var queue = HookQueue()
        for n in 0..<(HookQueue.callCapacity + 3) { queue.submit(.call(["NETRES_CALL_ID": "c\(n)"])) }
        let first = queue.next()
        #expect(first?.droppedCalls == 3)
        if case .call(let variables)? = first?.job { #expect(variables["NETRES_CALL_ID"] == "c3") }
        #expect(queue.next()?.droppedCalls == 0, "counts are reported once")
    }

    @Test func aCallEventHasEveryVariableAndEscapesThePeer() {
        let call = HookEnvironment.Call(
            id: "c1", account: "alice", peer: "sip:x@y.test\r\nX: 1", state: "alerting", direction: "incoming",
            trigger: "remote", reason: "", heldBack: 70)
        let variables = HookEnvironment.variables(ofCall: call, clock: WallClock())
        let transition = HookEnvironment.variables(of: transition(.initial), clock: WallClock())
        #expect(Set(variables.keys) == Set(transition.keys), "both kinds carry every variable")
        #expect(variables["NETRES_EVENT"] == "call" && variables["NETRES_CALL_STATE"] == "alerting")
        #expect(variables["NETRES_ACCOUNT"] == "alice" && variables["NETRES_CALL_ID"] == "c1")
        #expect(variables["NETRES_PEER"]?.contains("\r") == false && variables["NETRES_PEER"]?.contains("\n") == false)
        #expect(variables["NETRES_REASON"] == "" && transition["NETRES_CALL_ID"] == "")
        #expect(variables["NETRES_CALL_HELD_BACK"] == "70" && transition["NETRES_CALL_HELD_BACK"] == "")
    }
}
