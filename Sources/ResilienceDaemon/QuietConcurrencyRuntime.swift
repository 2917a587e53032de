import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Takes Swift concurrency's global executor off libdispatch's worker pool, so an idle `netres`
/// process sleeps.
///
/// On Linux the first job that reaches libdispatch's global queues starts its worker-pool
/// monitor (`_dispatch_workq_monitor_pools`), a timer that wakes the process once a second for
/// the rest of its life. Two runtime hooks route every global job to SwiftNIO's singleton event
/// loop group instead, whose threads sleep in `epoll_wait` with no timeout when nothing is due:
/// - immediate jobs through NIO's own
///   `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`;
/// - jobs with a deadline (`Task.sleep`, `ContinuousClock.sleep`) through
///   `swift_task_enqueueGlobalWithDeadline_hook` and `…WithDelay_hook`, as a timer of one loop.
///
/// Invariants: ``install()`` runs once, on the main thread, before the first task is created
/// (the top of `main`); it changes nothing when either hook is taken already and says so in its
/// result. A job with a deadline runs no earlier than asked; a deadline on the continuous clock
/// is turned into a delay from the same clock's now, so the timer itself counts CLOCK_MONOTONIC.
public enum QuietConcurrencyRuntime {
    /// What ``install()`` managed.
    public enum Outcome: String, Sendable {
        case installed
        /// NIO could not take the global executor (another hook, an unsupported runtime).
        case globalExecutorTaken
        /// The global executor is NIO's, but a deadline hook was taken: timers still use libdispatch.
        case deadlineHookTaken
    }

    /// Installs both hooks; call first thing in `main`.
    @discardableResult
    public static func install() -> Outcome {
        guard NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() else {
            return .globalExecutorTaken
        }
        guard installDeadlineHook(), installDelayHook() else { return .deadlineHookTaken }
        return .installed
    }

    /// Runs `job` on a loop of the singleton group after `nanoseconds`.
    fileprivate static func enqueue(_ job: UnownedJob, afterNanoseconds nanoseconds: Int64) {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let executor = loop.executor.asUnownedSerialExecutor()
        if nanoseconds <= 0 {
            loop.execute { job.runSynchronously(on: executor) }
        } else {
            loop.scheduleTask(in: .nanoseconds(nanoseconds)) { job.runSynchronously(on: executor) }
        }
    }

    private typealias DeadlineHook =
        @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, OpaquePointer?) -> Void
    private typealias DelayHook = @convention(thin) (UInt64, UnownedJob, OpaquePointer?) -> Void

    private static func installDeadlineHook() -> Bool {
        let hook: DeadlineHook = { seconds, nanoseconds, _, _, clock, job, _ in
            var nowSeconds: Int64 = 0
            var nowNanoseconds: Int64 = 0
            swiftGetTime(&nowSeconds, &nowNanoseconds, clock)
            // Clamped: a deadline from the far future must not overflow the arithmetic.
            let seconds = min(max(seconds - nowSeconds, -1), 100 * 365 * 86_400)
            QuietConcurrencyRuntime.enqueue(
                job, afterNanoseconds: seconds * 1_000_000_000 + nanoseconds - nowNanoseconds)
        }
        return swap(hook: hook, into: "swift_task_enqueueGlobalWithDeadline_hook")
    }

    private static func installDelayHook() -> Bool {
        let hook: DelayHook = { delay, job, _ in
            QuietConcurrencyRuntime.enqueue(job, afterNanoseconds: Int64(clamping: delay))
        }
        return swap(hook: hook, into: "swift_task_enqueueGlobalWithDelay_hook")
    }

    /// Stores `hook` in the runtime's hook variable `symbol` when it is still empty.
    private static func swap<Hook>(hook: Hook, into symbol: String) -> Bool {
        guard let variable = dlsym(dlopen(nil, RTLD_NOW), symbol) else { return false }
        let slot = variable.assumingMemoryBound(to: UnsafeRawPointer?.self)
        guard slot.pointee == nil else { return false }
        slot.pointee = unsafeBitCast(hook, to: UnsafeRawPointer.self)
        return true
    }
}

/// The concurrency runtime's reading of its clocks (1 continuous, 2 suspending).
@_silgen_name("swift_get_time")
private func swiftGetTime(
    _ seconds: UnsafeMutablePointer<Int64>, _ nanoseconds: UnsafeMutablePointer<Int64>, _ clock: Int32)
