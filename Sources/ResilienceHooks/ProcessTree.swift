internal import CProcessControl
internal import ChildProcesses
internal import Foundation
internal import Glibc

/// Collects what a hook leaves behind, including children that called `setsid` and so left its
/// process group.
///
/// A process that is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) inherits every orphan of
/// its descendants instead of init: a hook's grandchild whose parent exits becomes this process's
/// child, whatever session or group it moved to. ``sweepOrphans()`` kills and reaps them.
///
/// Invariant: only a process whose children are all hooks may become a subreaper (`netres run`
/// and `netres watch`), since the sweep kills every child it finds; a test runner never does.
public enum ProcessTree {
    /// Makes this process a child subreaper. Call at start, before any hook runs.
    /// - Returns: false when the kernel refused (then a hook's escaped children are not collected).
    @discardableResult
    public static func becomeSubreaper() -> Bool {
        cprocess_set_child_subreaper() == 0
    }

    /// Whether this process is a child subreaper.
    public static var isSubreaper: Bool {
        cprocess_is_child_subreaper() == 1
    }

    /// Most rounds of kill-and-reap: each round takes the children that orphans became.
    static let sweepRounds = 200

    /// SIGKILLs every child of this process and reaps it, round after round (their own children
    /// become ours as they die), until none is left or ``sweepRounds`` pass. The rounds (a `/proc`
    /// scan and a 2 ms pause each) run on a thread of their own (`OffThePool`): the calling task
    /// waits suspended and no thread of Swift's pool is held, which in `netres run` would be the
    /// daemon's one event loop.
    /// - Returns: how many processes were killed.
    @discardableResult
    public static func sweepOrphans() async -> Int {
        await OffThePool.run(named: "netres-hook-sweep") { sweepOrphansBlocking() }
    }

    /// ``sweepOrphans()`` on the calling thread, which it blocks.
    static func sweepOrphansBlocking() -> Int {
        let me = getpid()
        var killed = 0
        for _ in 0..<sweepRounds {
            let children = Self.children(of: me)
            if children.isEmpty {
                reapAll()
                return killed
            }
            for child in children where kill(child, SIGKILL) == 0 { killed += 1 }
            reapAll()
            usleep(2_000)
        }
        return killed
    }

    /// Reaps every exited child without blocking.
    static func reapAll() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    /// Living (not zombie) processes whose parent is `parent`, from `/proc/PID/stat`.
    static func children(of parent: pid_t) -> [pid_t] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { pid_t($0) }.filter { pid in
            guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return false }
            // "pid (comm) state ppid …": comm may hold spaces and parentheses, so parse after the last ')'.
            let text = String(decoding: stat, as: UTF8.self)
            guard let close = text.lastIndex(of: ")") else { return false }
            let fields = text[text.index(after: close)...].split(separator: " ", maxSplits: 3)
            guard fields.count >= 2, fields[0] != "Z" else { return false }
            return pid_t(fields[1]) == parent
        }
    }
}
