internal import Foundation
internal import Glibc

/// Blocking work — `waitpid`, `poll`, a `/proc` sweep, a program run to its end — done on a
/// thread of its own while the calling task waits suspended: the package's one way for async
/// code to make a blocking call.
///
/// Swift's cooperative pool has one thread per core (two on the CI machine; one event loop in
/// `netres run`, whose global executor is NIO's). A blocking call made on one of its threads
/// holds that thread for the whole wait, and every other task of the process (timers, sockets,
/// other test suites) waits with it. So library code never blocks a caller's pool thread, and
/// tests neither: both go through ``run(named:_:)``.
///
/// Invariants: each call starts a new thread that runs `work` alone and ends with it (so
/// `work` may change per-thread state such as the network namespace, which no later work sees);
/// the thread carries `name` in `/proc/self/task/*/comm` (Foundation's `Thread.name` reaches
/// only Foundation, not the kernel); the calling task is resumed exactly once, with what `work`
/// returned or threw.
public enum OffThePool {
    /// Runs `work` on a new thread named `name` (at most 15 bytes are kept) and returns what it
    /// returns (or throws what it throws), the calling task suspended meanwhile.
    public static func run<Value: Sendable, Failure: Error>(
        named name: String = "netres-blocking", _ work: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result: Result<Value, Failure> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                nameCurrentThread(name)
                continuation.resume(returning: Result { () throws(Failure) -> Value in try work() })
            }
        }
        return try result.get()
    }
}

/// Names the calling thread through `/proc/thread-self/comm` (`pthread_setname_np` is hidden
/// without _GNU_SOURCE); best effort: a failure only loses the name.
private func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
