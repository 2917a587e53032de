import Foundation
import Glibc

/// baresip's SIP trace (`-s`) in its log: each message is `ESC[36;1m#`, a line
/// `UDP SRC -> DST`, the message, then `ESC[;m`; other log lines sit between them.
enum BaresipTrace {
    static let begin = "\u{1B}[36;1m#\n"
    static let end = "\u{1B}[;m"

    /// The traced messages of `log`, in order, at most ``LabSIPp/maximumMessages``; a message is
    /// `sent` when its source is `own` (`address:port`), or ends with it (`:port`). Malformed
    /// entries are skipped.
    static func parse(log: String, own: String) -> [SIPpMessage] {
        var messages: [SIPpMessage] = []
        for entry in log.components(separatedBy: begin).dropFirst() {
            guard messages.count < LabSIPp.maximumMessages else { break }
            let parts = entry.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let close = parts[1].range(of: end) else { continue }
            let route = parts[0].split(separator: " ")
            guard route.count == 4, route[2] == "->" else { continue }
            let text = String(parts[1][..<close.lowerBound])
            let start =
                text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            messages.append(
                SIPpMessage(
                    sent: route[1].hasSuffix(own) && (own.hasPrefix(":") || route[1] == own), at: 0, startLine: start,
                    text: text))
        }
        return messages
    }

    /// The log without its trace and without the status line menu redraws with carriage returns.
    static func logLines(_ log: String) -> [String] {
        var lines: [String] = []
        for (index, entry) in log.components(separatedBy: begin).prefix(LabSIPp.maximumMessages).enumerated() {
            let rest = index == 0 ? Substring(entry) : entry.range(of: end).map { entry[$0.upperBound...] } ?? ""
            for line in rest.split(whereSeparator: \.isNewline) where !line.hasPrefix("[") && !line.isEmpty {
                lines.append(String(line.prefix(300)))
            }
        }
        return lines
    }
}

/// One `ctrl_tcp` exchange on a TCP socket made in the phone's host: non-blocking, polled with
/// `Task.sleep` (no thread of the shared pool blocks), bounded to 5 s and 64 KiB.
enum BaresipControl {
    /// Connects `fd` to `127.0.0.1:port`, sends `netstring`, and returns the first netstring of
    /// the reply that is a response (`"response":true`), as a JSON object.
    static func exchange(_ fd: Int32, port: Int, netstring: Data) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + .seconds(5)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(UInt16(port).bigEndian)
        target.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 || errno == EINPROGRESS else { throw failure("connect to ctrl_tcp \(port)") }
        var pending = netstring
        var received = Data()
        while ContinuousClock.now < deadline {
            if !pending.isEmpty {
                let written = pending.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written > 0 {
                    pending.removeFirst(written)
                } else if errno != EAGAIN && errno != EINPROGRESS && errno != ENOTCONN {
                    throw failure("send to ctrl_tcp \(port)")
                }
            } else {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 {
                    received.append(contentsOf: buffer[..<count])
                    guard received.count <= 65_536 else { throw failure("ctrl_tcp reply over 64 KiB", errno: 0) }
                    while let (object, rest) = firstNetstring(received) {
                        received = rest
                        if object["response"] as? Bool == true { return object }
                    }
                    continue
                }
                if count == 0 { throw failure("ctrl_tcp closed before its response", errno: 0) }
                if errno != EAGAIN { throw failure("recv from ctrl_tcp \(port)") }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw NetworkLabError(.timedOut, "ctrl_tcp \(port): no response within 5 s")
    }

    /// The first complete netstring (`LEN:JSON,`) of `data` as a JSON object and what follows it;
    /// nil while it is incomplete. A netstring that is not a JSON object becomes an empty object.
    static func firstNetstring(_ data: Data) -> ([String: Any], Data)? {
        guard let colon = data.firstIndex(of: UInt8(ascii: ":")), colon - data.startIndex <= 6,
            let length = Int(String(decoding: data[data.startIndex..<colon], as: UTF8.self)), length >= 0,
            data.endIndex - colon > length + 1
        else { return nil }
        let body = data[(colon + 1)..<(colon + 1 + length)]
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        return (object, Data(data[(colon + 2 + length)...]))
    }

    static func failure(_ what: String, errno code: Int32 = errno) -> NetworkLabError {
        NetworkLabError(.commandFailed, code == 0 ? what : "\(what): \(errorText(code))")
    }
}
