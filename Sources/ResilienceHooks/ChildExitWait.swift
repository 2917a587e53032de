internal import CProcessControl
import ChildProcesses
internal import Foundation
internal import Glibc

/// Waits for a hook to exit without a timer: one `poll(2)` on the child's pidfd and its output
/// pipe, on a thread of its own (`OffThePool`), so the Swift concurrency pool never blocks and
/// nothing wakes the process but the child's output, its exit or the deadline.
///
/// A `Task.sleep` loop would cost 50 wake-ups a second while a hook runs and, worse, start
/// libdispatch's once-a-second monitor for the rest of the daemon's life (see the daemon's
/// `QuietConcurrencyRuntime`); this waits on events instead.
///
/// Invariants: the child is never reaped here (its pid, and so its process group id, stays
/// reserved for the caller's `kill(-pid, …)`); the pipe is drained as it fills, at most
/// `HookRun.drainReads` chunks per wake-up, and watched no more once it reports end of file
/// (a hook that closed its output wakes nothing); every pass of the loop is one event, one
/// interrupted `poll`, or the end; the pidfd is closed on return. Where `pidfd_open` fails (a
/// kernel before 5.3), the same loop wakes every 20 ms to check the child instead.
enum ChildExitWait {
    /// True when the child exited before `deadline`, false when the deadline passed first; on its
    /// own thread, with `tail` filled from `output` meanwhile.
    static func exited(
        _ child: ChildProcess, until deadline: ContinuousClock.Instant, draining output: Int32, into tail: OutputTail
    ) async -> (exited: Bool, tail: OutputTail) {
        await OffThePool.run(named: "netres-hook-wait") {
            var tail = tail
            let exited = block(child, until: deadline, draining: output, into: &tail)
            return (exited, tail)
        }
    }

    /// The fallback's check interval when there is no pidfd.
    static let fallbackInterval = 20

    /// ``exited(_:until:draining:into:)`` on the calling thread (which it blocks).
    static func block(
        _ child: ChildProcess, until deadline: ContinuousClock.Instant, draining output: Int32,
        into tail: inout OutputTail
    ) -> Bool {
        let pidfd = cprocess_pidfd_open(child.pid)
        defer { if pidfd >= 0 { close(pidfd) } }
        var watched = [
            pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0), pollfd(fd: output, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            if pidfd < 0, child.hasExitedUnreaped() { return true }
            let remaining = deadline - .now
            guard remaining > .zero else { return false }
            // Whole milliseconds, rounded up (a deadline is never missed by rounding down), at
            // most a day per pass (the loop recomputes what remains).
            let (seconds, attoseconds) = remaining.components
            var timeout = Int32(min(seconds, 86_400) * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            if pidfd < 0 { timeout = min(timeout, Int32(fallbackInterval)) }
            let ready = poll(&watched, nfds_t(watched.count), timeout)
            if ready < 0, errno != EINTR { return child.hasExitedUnreaped() }
            guard ready > 0 else { continue }
            let pipe = watched[1].revents
            if pipe & Int16(POLLIN) != 0 { HookRun.drain(output, into: &tail) }
            // End of file with nothing left to read: a negative descriptor is skipped by poll.
            if pipe & Int16(POLLIN) == 0, pipe & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { watched[1].fd = -1 }
            if watched[0].revents != 0 { return true }
        }
    }
}
