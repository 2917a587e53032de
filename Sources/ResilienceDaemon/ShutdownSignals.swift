import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// SIGTERM and SIGINT without libdispatch: a `sigaction` handler writes the signal number to a
/// pipe, and a thread of its own, blocked in `read`, hands it on.
///
/// service-lifecycle's `UnixSignalsSequence` watches signals with a `DispatchSource`, which
/// starts libdispatch's worker-pool monitor: one wake-up a second for the life of the process.
/// This does the same job asleep.
///
/// Invariants: installed at most once per process (a second call is refused); the handler only
/// calls `write(2)` (async-signal-safe); `onSignal` runs on the reader thread, once per signal
/// delivered, in order.
public enum ShutdownSignals {
    private static let installed = Atomic<Bool>(false)

    /// Routes `signals` to `onSignal`; false when already installed or the pipe cannot be made.
    @discardableResult
    public static func install(_ signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) -> Bool {
        guard installed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return false
        }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return false }
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)  // a full pipe drops a signal, never blocks the handler
        signalPipe.store(fds[1], ordering: .relaxed)
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipe.load(ordering: .relaxed), &byte, 1)
            }
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
        let reader = fds[0]
        let thread = Thread {
            var byte: UInt8 = 0
            // Ends only with the process: each pass is one delivered signal.
            while true {
                let count = read(reader, &byte, 1)
                if count == 1 { onSignal(Int32(byte)) } else if count < 0, errno != EINTR { return }
            }
        }
        thread.name = "netres-signals"
        thread.start()
        return true
    }
}

/// The write end of the signal pipe, read by the signal handler (an atomic: no locks in a handler).
private let signalPipe = Atomic<Int32>(-1)
