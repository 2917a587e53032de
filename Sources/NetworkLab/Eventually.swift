/// Polls `condition` every `interval` until it holds or `bound` has passed, sleeping the task
/// between polls (never blocking a thread of the shared pool); whether it held.
///
/// `bound` is a hang guard, not a timing assertion: give it generous room on a shared machine.
public func eventually(
    within bound: Duration, every interval: Duration = .milliseconds(50),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + bound
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}
