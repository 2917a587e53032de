import Foundation

/// Reads one thread's scheduler counters from `/proc/self/task/<id>/status`.
enum ReaderThreadStats {
    /// Voluntary plus involuntary context switches of the thread; nil when it is gone.
    static func contextSwitches(thread id: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/task/\(id)/status", encoding: .utf8) else {
            return nil
        }
        let counts = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }.compactMap {
            Int($0.split(separator: "\t").last ?? "")
        }
        return counts.count == 2 ? counts.reduce(0, +) : nil
    }
}
