import Foundation
import NetworkLab

extension SIPLab {
    /// Runs `ip -batch` in the client host on a FIFO: writes `first`, waits `gap`, writes `second`,
    /// closes the FIFO and waits for `ip` to exit 0 (it exits at end of input), so the two halves of
    /// an address change are `gap` apart in one process. The FIFO is opened non-blocking, retried
    /// for at most 5 s, so a failed `ip` cannot hang the bench.
    func ipBatch(_ first: [String], then gap: Duration, _ second: [String]) async throws {
        let fifo = directory + "/ip-batch.fifo"
        unlink(fifo)
        guard mkfifo(fifo, 0o600) == 0 else { throw BenchError("mkfifo \(fifo) failed") }
        defer { unlink(fifo) }
        let child = try Spawned(["/usr/sbin/ip", "-n", client.namespace, "-batch", fifo])
        var fd: Int32 = -1
        for _ in 0..<250 where fd < 0 {
            fd = open(fifo, O_WRONLY | O_NONBLOCK)
            if fd < 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        guard fd >= 0 else {
            child.stop()
            throw BenchError("ip -batch did not open \(fifo) within 5 s")
        }
        func write(_ lines: [String]) {
            let bytes = Array(lines.map { $0 + "\n" }.joined().utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }
        write(first)
        try await Task.sleep(for: gap)
        write(second)
        close(fd)
        let status = try child.wait()
        guard status == 0 else { throw BenchError("ip -batch exited \(status)") }
    }
}
