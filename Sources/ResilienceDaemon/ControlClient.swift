internal import Glibc

/// The `netres ctl` side of the control socket: blocking POSIX calls, bounded by a timeout.
public enum ControlClient {
    /// Sends one command line, half-closes, and returns everything the server replied.
    /// - Throws: ``DaemonError`` when the socket cannot be reached or the reply does not come in time.
    public static func send(_ line: String, socket path: String, timeoutSeconds: Int = 10) throws(DaemonError) -> String
    {
        let fd = try connect(socket: path, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        try sendLine(line, to: fd, path: path)
        shutdown(fd, Int32(SHUT_WR))
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else {
                if errno == EINTR { continue }
                throw .system("no reply from \(path)")
            }
            reply += buffer[..<n]
        }
        return String(decoding: reply, as: UTF8.self)
    }

    /// Sends one line that opens a session (`events`) and hands each line the daemon sends to
    /// `each` (without its newline) until the daemon closes or `each` returns false. Keeps its
    /// side open: the session ends when this returns.
    /// - Throws: ``DaemonError`` when the socket cannot be reached or a line exceeds 64 KiB.
    public static func stream(_ line: String, socket path: String, each: (String) -> Bool) throws(DaemonError) {
        let fd = try connect(socket: path, timeoutSeconds: 10)
        defer { close(fd) }
        try sendLine(line, to: fd, path: path)
        var forever = timeval(tv_sec: 0, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, socklen_t(MemoryLayout<timeval>.size))
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return }
            guard n > 0 else {
                if errno == EINTR { continue }
                throw .system("reading \(path)")
            }
            pending += buffer[..<n]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                guard each(String(decoding: pending[..<newline], as: UTF8.self)) else { return }
                pending.removeSubrange(...newline)
            }
            guard pending.count <= 65536 else { throw DaemonError("a line from \(path) exceeds 64 KiB") }
        }
    }

    /// Writes `line` and a newline to `fd`, all of it.
    private static func sendLine(_ line: String, to fd: Int32, path: String) throws(DaemonError) {
        var request = Array((line + "\n").utf8)[...]
        while !request.isEmpty {
            let n = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw .system("send \(path)") }
            request = request.dropFirst(n)
        }
    }

    /// A connected unix stream socket to `path` with send and receive timeouts; the caller closes it.
    /// - Throws: ``DaemonError`` when the path is too long or the socket cannot be reached.
    public static func connect(socket path: String, timeoutSeconds: Int = 10) throws(DaemonError) -> Int32 {
        guard var address = sockaddr_un(path: Array(path.utf8)) else {
            throw DaemonError("control socket path too long: \(path)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let failure = DaemonError.system("connect \(path)")
            close(fd)
            throw failure
        }
        return fd
    }
}
