import ChildProcesses
import Foundation
import Glibc
import Synchronization

@testable import SIPPlugin

/// A DNS server on loopback whose answers a test writes: one UDP socket and one TCP listener on
/// the same port, served from a thread of its own until ``stop()`` or ``lifetime`` (every loop
/// bounded), answering each question with what ``zone`` gives for it.
final class ScriptedDNSServer: Sendable {
    /// What one question gets: records for the answer and additional sections, and whether a
    /// UDP answer says TC with only the first `udpRecords` answers in it.
    struct Answer: Sendable {
        var answers: [DNSRecord] = []
        var additionals: [DNSRecord] = []
        var truncatedOverUDPAfter: Int?
    }

    static let lifetime: Double = 120

    let port: Int
    private let udp: Int32
    private let tcp: Int32
    private let stopped = Atomic<Bool>(false)
    private let asked = Mutex<[(name: String, type: UInt16, tcp: Bool)]>([])
    private let zone: @Sendable (String, DNSRecordType) -> Answer

    init(zone: @escaping @Sendable (String, DNSRecordType) -> Answer) throws {
        self.zone = zone
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = ContactProbe.address("127.0.0.1", 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        let port = ContactProbe.port(of: address)
        tcp = listener
        self.port = port
        udp = (try? UDPTestPeer(port: port)).map { dup($0.fd) } ?? -1
        guard listening, udp >= 0 else { throw HarnessError("scripted DNS server: no port") }
        let server = self
        Thread.detachNewThread { server.serve() }
    }

    deinit {
        close(udp)
        close(tcp)
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// The questions asked so far: name, type, and whether over TCP.
    var questions: [(name: String, type: UInt16, tcp: Bool)] { asked.withLock { $0 } }

    var configuration: ResolverConfiguration {
        ResolverConfiguration(servers: [(host: "127.0.0.1", port: port)], timeout: .seconds(2), attempts: 1)
    }

    private func serve() {
        let deadline = Date().addingTimeInterval(Self.lifetime)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.load(ordering: .relaxed), Date() < deadline {
            var fds = [
                pollfd(fd: udp, events: Int16(POLLIN), revents: 0), pollfd(fd: tcp, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&fds, 2, 100) > 0 else { continue }
            if fds[0].revents != 0 {
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(udp, &buffer, buffer.count, 0, $0, &length)
                    }
                }
                if count > 0, let reply = answer(Array(buffer[0..<count]), tcp: false) {
                    _ = withUnsafePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(udp, reply, reply.count, 0, $0, length)
                        }
                    }
                }
            }
            if fds[1].revents != 0 { serveConnection(accept(tcp, nil, nil)) }
        }
    }

    /// One query over a connection: a two-byte length, the message; the answer likewise.
    private func serveConnection(_ fd: Int32) {
        guard fd >= 0 else { return }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while bytes.count < 2 || bytes.count < 2 + (Int(bytes[0]) << 8 | Int(bytes[1])) {
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { return }
            bytes += chunk[0..<count]
        }
        guard let reply = answer(Array(bytes.dropFirst(2)), tcp: true) else { return }
        let framed = [UInt8(reply.count >> 8), UInt8(reply.count & 0xff)] + reply
        _ = framed.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private func answer(_ query: [UInt8], tcp: Bool) -> [UInt8]? {
        var reader = DNSReader(bytes: query)
        guard let id = try? reader.u16(), (try? reader.take(10)) != nil, let name = try? reader.name(),
            let type = try? reader.u16(), (try? reader.u16()) != nil, let known = DNSRecordType(rawValue: type)
        else { return nil }
        asked.withLock { $0.append((name, type, tcp)) }
        let found = zone(name, known)
        var answers = found.answers
        var flags: UInt16 = 0x8180
        if !tcp, let kept = found.truncatedOverUDPAfter {
            answers = Array(answers.prefix(kept))
            flags |= 0x0200
        }
        let additionals = !tcp && found.truncatedOverUDPAfter != nil ? [] : found.additionals
        var bytes = DNSMessageTests.header(
            id: id, flags: flags, counts: [1, UInt16(answers.count), 0, UInt16(additionals.count)])
        bytes += Self.encode(name) + DNSMessageTests.u16(Int(type)) + [0, 1]
        for record in answers + additionals { bytes += Self.encode(record) }
        return bytes
    }

    static func encode(_ name: String) -> [UInt8] { DNSMessageTests.name(name) }

    /// A record in wire form (names uncompressed).
    static func encode(_ record: DNSRecord) -> [UInt8] {
        let (type, data): (Int, [UInt8])
        switch record.data {
        case .a(let text): (type, data) = (1, text.split(separator: ".").map { UInt8($0) ?? 0 })
        case .aaaa(let text): (type, data) = (28, ResolvedTargetCheck.bytes(of: text) ?? [])
        case .srv(let priority, let weight, let port, let target):
            (type, data) = (
                33,
                DNSMessageTests.u16(Int(priority)) + DNSMessageTests.u16(Int(weight)) + DNSMessageTests.u16(Int(port))
                    + encode(target)
            )
        case .naptr(let order, let preference, let flags, let service, let regexp, let replacement):
            let strings = [flags, service, regexp].flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            (type, data) = (
                35,
                DNSMessageTests.u16(Int(order)) + DNSMessageTests.u16(Int(preference)) + strings + encode(replacement)
            )
        case .cname(let target): (type, data) = (5, encode(target))
        case .other(let other): (type, data) = (Int(other), [])
        }
        return encode(record.name) + DNSMessageTests.u16(type) + [0, 1] + [0, 0, 0, UInt8(min(record.ttl, 255))]
            + DNSMessageTests.u16(data.count) + data
    }
}
