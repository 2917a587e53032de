public import ResilienceCore

extension NetlinkMonitor {
    /// Waits until the (debounced) path is satisfied and returns it; returns at once when it
    /// already is.
    ///
    /// - Throws: ``NetlinkError`` with ``NetlinkError/timeoutReason`` set to why the path is still
    ///   not satisfied when `timeout` elapses (e.g. `no-default-route`), or
    ///   ``NetlinkError/isShutDown`` when the monitor stops first.
    public func waitUntilSatisfied(timeout: Duration) async throws -> NetworkPath {
        let stream = transitions()
        let path = try await withThrowingTaskGroup(of: NetworkPath?.self) { group in
            group.addTask {
                for await transition in stream where transition.path.isSatisfied { return transition.path }
                throw NetlinkError.shutDown
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let path else { throw NetlinkError.timedOut(after: timeout, reason: currentPath().lossReason) }
        return path
    }
}
