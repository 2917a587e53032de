internal import Synchronization

/// The lines waiting for one control-socket session's writer: the daemon puts lines in without
/// ever waiting, the session's writer takes them out at the pace its reader reads.
///
/// Invariants:
/// - ``push(_:)`` never suspends and never blocks: a reader that does not keep up costs at most
///   ``capacity`` lines (plus one marker), never more memory.
/// - A line that does not fit is dropped and counted; the reader gets one marker line
///   (``droppedLine``) with the count, in the place of the lines it lost, before the next line
///   it does get.
/// - After ``finish()`` the lines already queued are still taken, then ``next()`` returns nil.
/// - At most one task waits in ``next()`` at a time (the session's writer); its cancellation
///   returns nil.
final class BoundedLineQueue: Sendable {
    let capacity: Int
    /// The marker for `count` dropped lines.
    let droppedLine: @Sendable (Int) -> String

    private struct State {
        var lines: [String] = []
        var head = 0
        var dropped = 0
        var droppedTotal = 0
        var finished = false
        var waiter: CheckedContinuation<String?, Never>?

        var count: Int { lines.count - head }

        mutating func take() -> String? {
            guard head < lines.count else { return nil }
            let line = lines[head]
            head += 1
            if head > 64 && head * 2 > lines.count {
                lines.removeFirst(head)
                head = 0
            }
            return line
        }
    }

    private let state = Mutex(State())

    init(capacity: Int, droppedLine: @escaping @Sendable (Int) -> String) {
        self.capacity = max(1, capacity)
        self.droppedLine = droppedLine
    }

    /// Queues `line`, or counts it dropped when ``capacity`` lines wait already. Returns false
    /// when it was dropped or the queue is finished.
    @discardableResult
    func push(_ line: String) -> Bool {
        let (waiter, delivered): (CheckedContinuation<String?, Never>?, Bool) = state.withLock { state in
            guard !state.finished else { return (nil, false) }
            if let waiter = state.waiter, state.count == 0, state.dropped == 0 {
                state.waiter = nil
                return (waiter, true)
            }
            guard state.count < capacity else {
                state.dropped += 1
                state.droppedTotal += 1
                return (nil, false)
            }
            if state.dropped > 0 {
                state.lines.append(droppedLine(state.dropped))
                state.dropped = 0
            }
            state.lines.append(line)
            return (nil, true)
        }
        waiter?.resume(returning: line)
        return delivered
    }

    /// The next line, waiting for one; nil once finished and drained, or when the waiting task is
    /// cancelled.
    func next() async -> String? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                let ready: String?? = state.withLock { state in
                    if let line = state.take() { return .some(line) }
                    if state.dropped > 0 {
                        defer { state.dropped = 0 }
                        return .some(droppedLine(state.dropped))
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Ends the queue: later pushes are refused, a waiting ``next()`` returns nil.
    func finish() {
        let waiter = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// Lines dropped since the queue was made.
    var droppedTotal: Int { state.withLock { $0.droppedTotal } }
}
