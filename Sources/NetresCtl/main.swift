// `netres-ctl`: the control-socket client of `netres run` as a program that answers within a few
// milliseconds of its start (`netres-bench ctl`: ~3 ms, `netres ctl` ~30 ms). It links the Swift standard library and Glibc only (no Foundation, no ICU, no
// NIO), so a push handler or a script that runs it per event pays no start-up of the 80 MB
// `netres` binary. It takes the words `netres ctl` takes and sends them as one line:
//
//     netres-ctl [--socket PATH] status [--json]
//     netres-ctl [--socket PATH] push ACCOUNT [--kind KIND] [--payload TEXT]
//     netres-ctl [--socket PATH] events          (streams until interrupted)
//
// Exit status: 0 on an answer, 1 when the daemon answers with an error, 2 when it cannot be
// reached. The daemon checks every line (ControlCommand); this program only frames it. Its few
// lines of JSON quoting and socket I/O repeat ResilienceOutput's and ControlClient's on purpose:
// importing either would link what this program exists to avoid.
import Glibc

let defaultSocket = "/run/netres/control.sock"

func fail(_ message: String, status: Int32) -> Never {
    let text = "netres-ctl: " + message + "\n"
    _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(status)
}

func writeOut(_ bytes: ArraySlice<UInt8>) {
    var rest = bytes
    while !rest.isEmpty {
        let n = rest.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { exit(0) }  // a closed pipe: the reader is gone
        rest = rest.dropFirst(n)
    }
}

/// A JSON string literal (RFC 8259 escaping), for the push payload.
func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// The line to send: the words as they are, except a push, sent as the JSON command so a
/// payload may hold spaces.
func requestLine(_ words: [String]) -> String {
    guard words.first == "push", words.count >= 2 else { return words.joined(separator: " ") }
    var members = ["\"command\":\"push\"", "\"account\":" + quoted(words[1])]
    var index = 2
    while index + 1 < words.count {
        switch words[index] {
        case "--kind": members.append("\"kind\":" + quoted(words[index + 1]))
        case "--payload": members.append("\"payload\":" + quoted(words[index + 1]))
        default: return words.joined(separator: " ")  // the daemon names what is wrong
        }
        index += 2
    }
    guard index == words.count else { return words.joined(separator: " ") }
    return "{" + members.joined(separator: ",") + "}"
}

func connectSocket(_ path: String) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { fail("socket path too long", status: 2) }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { fail("socket: \(String(cString: strerror(errno)))", status: 2) }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard connected == 0 else { fail("connect \(path): \(String(cString: strerror(errno)))", status: 2) }
    return fd
}

var arguments = Array(CommandLine.arguments.dropFirst())
var socketPath = defaultSocket
if arguments.first == "--socket" {
    guard arguments.count >= 2 else { fail("--socket needs a path", status: 2) }
    socketPath = arguments[1]
    arguments.removeFirst(2)
}
if let index = arguments.firstIndex(of: "--socket"), index + 1 < arguments.count {
    socketPath = arguments[index + 1]
    arguments.removeSubrange(index...(index + 1))
}
guard !arguments.isEmpty, arguments.first != "--help", arguments.first != "-h" else {
    let usage = "usage: netres-ctl [--socket PATH] COMMAND [ARGUMENTS]  (the commands of `netres ctl`, and events)\n"
    writeOut(Array(usage.utf8)[...])
    exit(arguments.isEmpty ? 2 : 0)
}
let streaming = arguments == ["events"]
let fd = connectSocket(socketPath)
var timeout = timeval(tv_sec: streaming ? 0 : 10, tv_usec: 0)
setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
var request = Array((requestLine(arguments) + "\n").utf8)[...]
while !request.isEmpty {
    let n = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard n > 0 else { fail("send \(socketPath): \(String(cString: strerror(errno)))", status: 2) }
    request = request.dropFirst(n)
}
if !streaming { shutdown(fd, Int32(SHUT_WR)) }
var reply: [UInt8] = []
var buffer = [UInt8](repeating: 0, count: 65536)
while true {
    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n == 0 { break }
    guard n > 0 else {
        if errno == EINTR { continue }
        fail("no reply from \(socketPath): \(String(cString: strerror(errno)))", status: 2)
    }
    if streaming {
        writeOut(buffer[..<n])
    } else {
        reply += buffer[..<n]
        guard reply.count <= 16 << 20 else { fail("reply over 16 MiB", status: 2) }
    }
}
if reply.starts(with: Array("error:".utf8)) {
    _ = reply.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(1)
}
writeOut(reply[...])
exit(0)
