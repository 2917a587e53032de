import Synchronization

/// A fan-out of values to any number of `AsyncStream` subscribers.
///
/// Invariants: every subscriber gets every value yielded after it subscribed, in order; a
/// subscriber whose stream is dropped or cancelled is removed; `finish()` ends every stream and
/// later subscribers get an already finished stream.
package final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var next = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }
    private let state = Mutex(State())

    package init() {}

    /// A new stream of the values yielded from now on, after `first` when given.
    package func subscribe(startingWith first: Element? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream()
        let id: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            if let first { continuation.yield(first) }
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Whether anyone listens (lets hot paths skip building events nobody reads).
    package var hasSubscribers: Bool { state.withLock { !$0.continuations.isEmpty } }

    package func yield(_ element: Element) {
        let targets = state.withLock { Array($0.continuations.values) }
        for continuation in targets { continuation.yield(element) }
    }

    package func finish() {
        let targets = state.withLock { state in
            state.finished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in targets { continuation.finish() }
    }
}
