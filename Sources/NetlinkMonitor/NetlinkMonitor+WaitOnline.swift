public import ResilienceCore

extension NetlinkMonitor {
    /// Waits until the (debounced) path is satisfied and returns it; returns at once when it
    /// already is.
    ///
    /// - Parameters:
    ///   - timeout: how long to wait.
    ///   - clock: the timeout sleeps on it. A process that keeps Swift concurrency off
    ///     libdispatch passes an event-loop clock: one `Task.sleep` (`ContinuousClock`'s) starts
    ///     libdispatch's once-a-second monitor for the rest of the process's life.
    /// - Throws: ``NetlinkError`` with ``NetlinkError/timeoutReason`` set to why the path is still
    ///   not satisfied when `timeout` elapses (e.g. `no-default-route`), or
    ///   ``NetlinkError/isShutDown`` when the monitor stops first.
    public func waitUntilSatisfied(
        timeout: Duration, clock: any RuntimeClock = ContinuousClock()
    ) async throws -> NetworkPath {
        let stream = transitions()
        let path = try await withThrowingTaskGroup(of: NetworkPath?.self) { group in
            group.addTask {
                for await transition in stream where transition.path.isSatisfied { return transition.path }
                throw NetlinkError.shutDown
            }
            group.addTask {
                try await clock.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let path else { throw NetlinkError.timedOut(after: timeout, reason: currentPath().lossReason) }
        return path
    }
}
