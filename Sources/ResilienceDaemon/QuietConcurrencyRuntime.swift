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
/// Invariant: ``install()`` runs once, on the main thread, before the first task is created
/// (the top of `main`); it returns false and changes nothing when the executor was taken.
public enum QuietConcurrencyRuntime {
    /// Installs NIO's event loops as the global executor; call first thing in `main`.
    @discardableResult
    public static func install() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
