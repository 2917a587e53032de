import Synchronization

/// Records a stream (the manager's `events()`, an executor's, a source's transitions) and lets a
/// test wait until what it saw satisfies a predicate.
///
/// ```swift
/// let events = EventRecorder.recording(manager.events())   // subscribe before acting: nothing is missed
/// await network.lose(.noCarrier)
/// try await events.wait("the loss decided") { $0.contains { $0.decision?.trigger == .network(.lost(.noCarrier)) } }
/// ```
///
/// Invariants:
/// - Waiting never polls and never sleeps: a waiter is a continuation, resumed by the element
///   that makes its predicate true (or at once when it is true already).
/// - A wait ends after at most `timeout` of real time, or as soon as the stream finishes without
///   the predicate holding; either way it throws ``EventRecorderTimeout``, whose description says
///   what was awaited, where, and every element seen (one `description` per line).
/// - Elements are kept in arrival order; ``recorded`` is a snapshot.
public final class EventRecorder<Element: Sendable>: Sendable {
    private struct Waiter {
        var predicate: @Sendable ([Element]) -> Bool
        var continuation: CheckedContinuation<[Element], any Error>
        var what: String
        var timeout: Duration
    }
    private struct State {
        var items: [Element] = []
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var finished = false
    }
    private let state = Mutex(State())
    private let reader = Mutex<Task<Void, Never>?>(nil)

    private init() {}

    /// Starts recording `stream` at once; subscribe before acting, so nothing is missed.
    public static func recording<Stream: AsyncSequence & Sendable>(_ stream: Stream) -> EventRecorder
    where Stream.Element == Element {
        let recorder = EventRecorder()
        let task = Task { [weak recorder] in
            do {
                for try await element in stream {
                    guard let recorder else { return }
                    recorder.append(element)
                }
            } catch {}
            recorder?.finish()
        }
        recorder.reader.withLock { $0 = task }
        return recorder
    }

    deinit { reader.withLock { $0?.cancel() } }

    /// Everything recorded so far, in arrival order.
    public var recorded: [Element] { state.withLock { $0.items } }

    /// Returns every element recorded once `predicate` holds for them (at once if it already does).
    ///
    /// - Parameters:
    ///   - what: said in the failure, e.g. `"three registrations"`.
    ///   - timeout: real time, a guard against hangs, not a measurement.
    ///   - fileID: where the wait is, for the failure; leave the default.
    ///   - line: where the wait is, for the failure; leave the default.
    ///   - predicate: true once the elements recorded so far show what the test waits for.
    /// - Throws: ``EventRecorderTimeout`` when the timeout passes or the stream ends first.
    @discardableResult
    public func wait(
        _ what: String = "the predicate", timeout: Duration = .seconds(30), fileID: String = #fileID,
        line: Int = #line, until predicate: @escaping @Sendable ([Element]) -> Bool
    ) async throws -> [Element] {
        let label = "\(what) (\(fileID):\(line))"
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.expire(id, reason: "timed out after \(timeout)")
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let outcome: Result<[Element], EventRecorderTimeout>? = state.withLock { state in
                if predicate(state.items) { return .success(state.items) }
                if state.finished {
                    return .failure(Self.failure(label, "the stream finished", state.items))
                }
                state.waiters[id] = Waiter(
                    predicate: predicate, continuation: continuation, what: label, timeout: timeout)
                return nil
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    /// How many elements were recorded so far: the index the next one gets, a mark for
    /// ``first(since:_:timeout:fileID:line:where:)``.
    public var count: Int { state.withLock { $0.items.count } }

    /// Returns the first element at or after index `since` that matches, once one has arrived.
    ///
    /// - Throws: ``EventRecorderTimeout`` when none arrives within `timeout` or the stream ends.
    public func first(
        since: Int = 0, _ what: String = "a matching element", timeout: Duration = .seconds(30),
        fileID: String = #fileID, line: Int = #line, where matching: @escaping @Sendable (Element) -> Bool
    ) async throws -> Element {
        let start = max(0, since)
        let seen = try await wait(what, timeout: timeout, fileID: fileID, line: line) {
            $0.count > start && $0[start...].contains(where: matching)
        }
        return seen[start...].first(where: matching)!
    }

    /// Returns the matching elements once at least `count` elements match.
    @discardableResult
    public func wait(
        count: Int = 1, _ what: String = "matching elements", timeout: Duration = .seconds(30),
        fileID: String = #fileID, line: Int = #line, where matching: @escaping @Sendable (Element) -> Bool
    ) async throws -> [Element] {
        try await wait("\(count) × \(what)", timeout: timeout, fileID: fileID, line: line) {
            $0.lazy.filter(matching).count >= count
        }.filter(matching)
    }

    private func append(_ element: Element) {
        let ready = state.withLock { state in
            state.items.append(element)
            let items = state.items
            var ready: [(CheckedContinuation<[Element], any Error>, [Element])] = []
            for (id, waiter) in state.waiters where waiter.predicate(items) {
                state.waiters[id] = nil
                ready.append((waiter.continuation, items))
            }
            return ready
        }
        for (continuation, items) in ready { continuation.resume(returning: items) }
    }

    private func finish() {
        let failed = state.withLock { state in
            state.finished = true
            let waiters = state.waiters.values.map { ($0.continuation, $0.what) }
            state.waiters = [:]
            return (waiters, state.items)
        }
        for (continuation, what) in failed.0 {
            continuation.resume(throwing: Self.failure(what, "the stream finished", failed.1))
        }
    }

    private func expire(_ id: UInt64, reason: String) {
        let expired = state.withLock { state in state.waiters.removeValue(forKey: id).map { ($0, state.items) } }
        guard let (waiter, items) = expired else { return }
        waiter.continuation.resume(throwing: Self.failure(waiter.what, reason, items))
    }

    private static func failure(_ what: String, _ reason: String, _ items: [Element]) -> EventRecorderTimeout {
        EventRecorderTimeout(awaited: what, reason: reason, seen: items.map { String(describing: $0) })
    }
}

/// A wait of ``EventRecorder`` that ended without its predicate holding.
public struct EventRecorderTimeout: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was awaited, with the file and line of the wait.
    public var awaited: String
    /// Why the wait ended: the timeout, or the stream finishing.
    public var reason: String
    /// Every element seen, in order, as `String(describing:)` renders it.
    public var seen: [String]

    public var description: String {
        let lines = seen.enumerated().map { "  \($0.offset + 1). \($0.element)" }
        return "waiting for \(awaited): \(reason); saw \(seen.count) event(s)"
            + (lines.isEmpty ? "" : ":\n" + lines.joined(separator: "\n"))
    }
}
