import Glibc
import NIOCore
import NIOPosix

/// Takes Swift concurrency's global executor off libdispatch's worker pool, so an idle `netres`
/// process sleeps.
///
/// On Linux the first job that reaches libdispatch's global queues starts its worker-pool
/// monitor (`_dispatch_workq_monitor_pools`), a timer that wakes the process once a second for
/// the rest of its life. SwiftNIO's
/// `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`
/// routes every global job to its singleton event loops instead, whose threads sleep in
/// `epoll_wait` with no timeout when nothing is due.
///
/// Measured, not assumed (`netres-bench idle-baseline quiet [sleep]`, Swift 6.3): with the
/// executor installed an idle program makes 0 context switches a minute; one 10 ms `Task.sleep`
/// still starts the monitor (60 a minute), because sleeps with a deadline go to libdispatch
/// whatever the runtime's deadline hooks say. So the daemon never uses `Task.sleep`: its timers
/// are ``EventLoopClock`` sleeps, lent to the plugins through `PluginContext.clock`, and signals
/// come through ``ShutdownSignals`` rather than a `DispatchSource`.
///
/// The group has **one** event loop: every actor, task, timer and socket of the daemon runs on
/// that thread, so a SIP transaction (send, answer, timers E and F, the action's timeout) never
/// hops between threads. With two loops each REGISTER cost about three context switches (the
/// timers on one loop, the socket on the other); the daemon's work is I/O, not computation, and
/// blocking work runs on NIO's thread pool, the netlink reader's and the hooks' own threads.
/// `NIO_SINGLETON_GROUP_LOOP_COUNT=N` in the environment still sets another count.
///
/// Invariant: ``install()`` runs once, on the main thread, before the first task is created
/// (the top of `main`); it returns false and changes nothing when the executor was taken.
public enum QuietConcurrencyRuntime {
    /// Installs NIO's event loops as the global executor; call first thing in `main`.
    @discardableResult
    public static func install() -> Bool {
        // NIO's own variable still wins, for measuring against more loops.
        if getenv("NIO_SINGLETON_GROUP_LOOP_COUNT") == nil { NIOSingletons.groupLoopCountSuggestion = 1 }
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
