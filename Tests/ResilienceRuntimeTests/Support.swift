import ResilienceCore
import ResilienceRuntime
import Synchronization

/// Collects the elements of a stream and lets a test wait, without sleeping, until they satisfy
/// a predicate.
final class Recorder<Element: Sendable>: Sendable {
    private struct Waiter {
        var predicate: @Sendable ([Element]) -> Bool
        var continuation: CheckedContinuation<[Element], Never>
    }
    private struct State {
        var items: [Element] = []
        var waiters: [Waiter] = []
    }
    private let state = Mutex(State())

    private init() {}

    /// Starts recording `stream` (subscribe before acting, so nothing is missed).
    static func recording(_ stream: AsyncStream<Element>) -> Recorder {
        let recorder = Recorder()
        Task {
            for await element in stream { recorder.append(element) }
        }
        return recorder
    }

    var items: [Element] { state.withLock { $0.items } }

    private func append(_ element: Element) {
        let ready = state.withLock { state in
            state.items.append(element)
            let items = state.items
            var ready: [(CheckedContinuation<[Element], Never>, [Element])] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(items) else { return false }
                ready.append((waiter.continuation, items))
                return true
            }
            return ready
        }
        for (continuation, items) in ready { continuation.resume(returning: items) }
    }

    /// Returns the items once `predicate` holds for them.
    @discardableResult
    func wait(until predicate: @escaping @Sendable ([Element]) -> Bool) async -> [Element] {
        await withCheckedContinuation { continuation in
            let items: [Element]? = state.withLock { state in
                if predicate(state.items) { return state.items }
                state.waiters.append(Waiter(predicate: predicate, continuation: continuation))
                return nil
            }
            if let items { continuation.resume(returning: items) }
        }
    }

    /// Returns once at least `count` items satisfy `matching`.
    @discardableResult
    func wait(count: Int = 1, where matching: @escaping @Sendable (Element) -> Bool) async -> [Element] {
        await wait { $0.filter(matching).count >= count }.filter(matching)
    }
}

func planned(
    _ kind: ActionKind, _ service: ServiceID, after: Set<ServiceID> = [], trigger: Trigger = .network(.restored)
) -> PlannedAction {
    PlannedAction(kind: kind, service: service, trigger: trigger, after: after, source: "test")
}

let lostPath = NetworkPath(status: .unsatisfied(.noCarrier))
let upPath = NetworkPath(status: .satisfied)

extension ActionEvent {
    var isStarted: Bool { outcome == .started }
    var isSucceeded: Bool { outcome == .succeeded }
    var isRetrying: Bool {
        if case .retrying = outcome { return true }
        return false
    }
    var retryAt: ContinuousClock.Instant? {
        if case .retrying(let at, _) = outcome { return at }
        return nil
    }
}
