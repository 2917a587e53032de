import Foundation

/// What a process costs while nothing happens: its context switches (every thread) over a
/// window, and its memory at the end of it.
struct IdleCost {
    var seconds: Int
    var wakeups: Int
    var residentKiB: Int
    var peakResidentKiB: Int
    /// User + system CPU time spent in the window.
    var cpu: Duration

    var perMinute: Double { Double(wakeups) * 60 / Double(max(seconds, 1)) }
}

/// Counts the context switches of several processes over the same window, so each figure has
/// its baseline from the same minute of the same machine.
enum IdleMeter {
    /// Sleeps `seconds` and returns each process's cost over them, in the order given.
    static func measure(_ pids: [Int32], seconds: Int) -> [IdleCost] {
        let before = pids.map(contextSwitchesByThread)
        let cpuBefore = pids.map(cpuTime)
        sleep(UInt32(max(seconds, 1)))
        return pids.indices.map { index in
            let after = contextSwitchesByThread(pid: pids[index])
            // Threads present throughout count their difference, new ones all they did; a thread
            // that exited in the window woke at least once to do so.
            var wakeups = 0
            for (tid, count) in after { wakeups += count - (before[index][tid] ?? 0) }
            wakeups += before[index].keys.filter { after[$0] == nil }.count
            let status = parseStatus(path: "/proc/\(pids[index])/status")
            return IdleCost(
                seconds: seconds, wakeups: wakeups, residentKiB: status["VmRSS"] ?? -1,
                peakResidentKiB: status["VmHWM"] ?? -1, cpu: cpuTime(pid: pids[index]) - cpuBefore[index])
        }
    }

    /// Context switches (voluntary and not) of each thread, by thread id.
    static func contextSwitchesByThread(pid: Int32) -> [String: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var counts: [String: Int] = [:]
        for tid in tasks {
            let status = parseStatus(path: "/proc/\(pid)/task/\(tid)/status")
            counts[tid] = (status["voluntary_ctxt_switches"] ?? 0) + (status["nonvoluntary_ctxt_switches"] ?? 0)
        }
        return counts
    }

    /// User + system time from `/proc/PID/stat` (fields 14 and 15, in clock ticks).
    static func cpuTime(pid: Int32) -> Duration {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return .zero }
        // Fields after the command name (which may hold spaces) start at field 3.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return .zero }
        let ticks = max(sysconf(Int32(_SC_CLK_TCK)), 1)
        return .milliseconds((user + system) * 1000 / ticks)
    }

    static func parseStatus(path: String) -> [String: Int] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var fields: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let number = Int(parts[1].split(whereSeparator: \.isWhitespace).first ?? "") else {
                continue
            }
            fields[String(parts[0])] = number
        }
        return fields
    }
}
