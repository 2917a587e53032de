import ChildProcesses
import Foundation
public import Glibc

/// How lab objects carry their owner's PID, and how the objects of dead owners are removed.
///
/// Every namespace a lab makes is named `netlab-<owner pid>-<lab>-<host>`, and its folder is
/// `/tmp/netlab-<owner pid>-<lab>`. Links, addresses, routes, nft tables and qdiscs live inside those
/// namespaces and die with them; processes started in a host are killed through `ip netns pids`.
/// So removing the namespaces and folders of owners that no longer run removes everything.
public enum LabOwnership {
    /// The prefix of every namespace and folder a lab makes.
    public static let prefix = "netlab-"

    /// The owner PID in a lab object's name, or nil when the name is not a lab's.
    public static func owner(of name: String) -> pid_t? {
        guard name.hasPrefix(prefix) else { return nil }
        let digits = name.dropFirst(prefix.count).prefix { $0.isNumber }
        guard !digits.isEmpty, digits.count <= 10, let pid = Int32(digits), pid > 0 else { return nil }
        return pid
    }

    /// Whether `pid` names a running process (a zombie counts as gone).
    public static func isAlive(_ pid: pid_t) -> Bool {
        if kill(pid, 0) != 0 && errno == ESRCH { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return false }
        return !stat[close...].dropFirst(2).hasPrefix("Z")
    }

    /// The lab namespaces present now (`/run/netns`).
    public static func namespaces() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? []).filter { owner(of: $0) != nil }
            .sorted()
    }

    /// Removes the namespaces (with every process inside) and folders of owners that are not running
    /// (or, with `all`, of every owner but this process); the names removed.
    @discardableResult
    public static func collectGarbage(all: Bool = false) -> [String] {
        let me = getpid()
        func abandoned(_ name: String) -> Bool {
            guard let pid = owner(of: name) else { return false }
            return pid != me && (all || !isAlive(pid))
        }
        var removed: [String] = []
        for namespace in namespaces() where abandoned(namespace) {
            killProcesses(inNamespace: namespace)
            if let ip = LabCommand.ip, LabCommand.runBlocking([ip, "netns", "delete", namespace]) == 0 {
                removed.append(namespace)
            }
        }
        removed += removeEtcFolders(where: abandoned)
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for folder in folders.sorted() where abandoned(folder) {
            killProcesses(naming: "/tmp/" + folder + "/")
            if (try? FileManager.default.removeItem(atPath: "/tmp/" + folder)) != nil {
                removed.append("/tmp/" + folder)
            }
        }
        return removed
    }

    /// ``collectGarbage(all:)`` for async callers, through `OffThePool`.
    static func collectGarbageOffThePool() async {
        _ = await OffThePool.run(named: "netlab-gc") { collectGarbage() }
    }

    /// SIGKILLs every process whose command line names a path under `folder` (a loopback registrar
    /// runs `kamailio -f <folder>/kamailio.cfg` outside any namespace); at most 100,000 processes read.
    static func killProcesses(naming folder: String) {
        let me = getpid()
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).prefix(100_000)
            .compactMap { pid_t($0) }.filter { $0 > 1 && $0 != me }
        for pid in pids {
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
            if String(decoding: data.prefix(65_536), as: UTF8.self).contains(folder) { kill(pid, SIGKILL) }
        }
    }

    /// ``killProcesses(inNamespace:)`` for async callers, through `OffThePool`: its `ip netns
    /// pids` runs, reaps and pauses hold no thread of Swift's pool.
    static func killProcessesOffThePool(inNamespace namespace: String) async {
        await OffThePool.run(named: "netlab-kill") { killProcesses(inNamespace: namespace) }
    }

    /// SIGKILLs every process whose network namespace is `namespace` (`ip netns pids`), at most 4 rounds
    /// (a dying Kamailio may fork once more). Blocks the calling thread: async code uses
    /// ``killProcessesOffThePool(inNamespace:)``.
    static func killProcesses(inNamespace namespace: String) {
        guard let ip = LabCommand.ip else { return }
        for _ in 0..<4 {
            let path = NSTemporaryDirectory() + "\(prefix)\(getpid())-pids-\(UInt32.random(in: 0...UInt32.max))"
            defer { unlink(path) }
            guard let child = try? ChildProcessLauncher.spawn([ip, "netns", "pids", namespace], output: path) else {
                return
            }
            _ = LabCommand.blockingReap(child)
            let pids = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 1 && $0 != getpid() }
            if pids.isEmpty { return }
            for pid in pids { kill(pid, SIGKILL) }
            usleep(20_000)
        }
    }
}
