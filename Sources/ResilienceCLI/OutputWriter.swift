import Glibc

/// Writes whole lines to standard output with one `write(2)` each (no stdio buffer), so a pipe
/// reader sees every transition the moment it happens. An actor so lines from concurrent streams
/// never interleave.
actor OutputWriter {
    func write(_ line: String) {
        writeAll(STDOUT_FILENO, line + "\n")
    }
}

/// Writes one line to standard output with one `write(2)` (no stdio buffer to flush).
func printLine(_ line: String) {
    writeAll(STDOUT_FILENO, line + "\n")
}

/// Writes a message to standard error.
func printError(_ message: String) {
    writeAll(STDERR_FILENO, message + "\n")
}

/// Writes every byte, retrying on short writes and EINTR; gives up silently on a closed pipe.
private func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        bytes = bytes.dropFirst(written)
    }
}
